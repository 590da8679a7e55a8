"""``/new``, ``/steer`` and ``/queue``: commands about where the next prompt goes.

None of them runs a model turn itself. ``/new`` asks the transport for a fresh session
(``data.action == "new_session"``); ``/steer`` hands guidance to the running turn, or returns the
text as a ``send`` directive when nothing runs; ``/queue`` returns a ``send`` directive that the
transport submits, which the core queues behind a running turn
(docs/reference/core.md#busy-input-and-the-queue, #steer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import CommandResult, CommandUsageError
from hermes_slash.common import session_of

if TYPE_CHECKING:
    from hermes_core import CommandContext

STEER_USAGE = "/steer TEXT"
QUEUE_USAGE = "/queue TEXT"


def _text(ctx: CommandContext, usage: str) -> str:
    text = ctx.args.strip()
    if not text:
        raise CommandUsageError(usage, f"/{ctx.name} needs some text; usage: {usage}")
    return text


async def new_command(ctx: CommandContext) -> CommandResult:
    """Run ``/new``: ask the transport to start a fresh session; this one is kept as it is.

    :param ctx: the dispatch context.
    :returns: ``data.action == "new_session"`` plus the current session's id, workspace,
        approval profile and model, for the transport to carry over.
    """
    session = session_of(ctx)
    info = session.info()
    data: dict[str, Any] = {
        "action": "new_session",
        "previous_session_id": session.id,
        "cwd": info.cwd,
        "profile": info.profile,
        "model": info.model,
    }
    if ctx.surface == "cli":
        # `hermes run` holds one session per process; a new one is simply a run without --session.
        output = (
            f"Session {session.id} is kept. Leave out --session (or pass a new id) "
            "to start a new session with hermes run."
        )
    else:
        output = f"Starting a new session; {session.id} is kept and can be resumed."
    return CommandResult(kind="exec", output=output, data=data)


async def steer_command(ctx: CommandContext) -> CommandResult:
    """Run ``/steer TEXT``: guidance for the running turn, given after its next tool step.

    :param ctx: the dispatch context; ``args`` is the guidance.
    :returns: ``exec`` when the running turn took it (``data.status == "accepted"``); otherwise
        a ``send`` directive with the text, so it becomes the next prompt and is never lost.
    :raises CommandUsageError: no text.
    :raises InvalidValue: the text is longer than the core allows.
    """
    session = session_of(ctx)
    text = _text(ctx, STEER_USAGE)
    status = session.steer(text)
    if status == "accepted":
        return CommandResult(
            kind="exec",
            output="Guidance noted; the model gets it after its current tool step.",
            data={"status": status},
        )
    why = "Nothing is running" if status == "idle" else "The running turn is already finishing"
    return CommandResult(
        kind="send",
        message=text,
        output=f"{why}; sending it as a prompt instead.",
        display={"text": text},
        data={"status": status},
    )


async def queue_command(ctx: CommandContext) -> CommandResult:
    """Run ``/queue TEXT``: send a prompt that waits behind the running turn.

    :param ctx: the dispatch context; ``args`` is the prompt.
    :returns: a ``send`` directive with the text; ``data.busy`` says whether it will wait.
    :raises CommandUsageError: no text.
    """
    session = session_of(ctx)
    text = _text(ctx, QUEUE_USAGE)
    busy = session.busy
    output = "Queued; it runs when the current turn ends." if busy else "Nothing is running; sending it now."
    return CommandResult(
        kind="send", message=text, output=output, display={"text": text}, data={"busy": busy, "queued": busy}
    )
