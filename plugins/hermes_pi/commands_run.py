"""pi's prompting commands: prompt, steer, follow_up, abort, clear_queue
(docs/reference/pi.md#prompting).

A prompt that starts with a known ``/command`` runs that slash command (pi's extension commands):
its output arrives as a ``notify`` dialog and the prompt is ``handled``, or it hands back a message
that starts a run. An unknown ``/word`` goes to the model as text.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from hermes_core import CommandNotAvailable, HermesError, ImagePart, TextPart
from hermes_pi.wire import BadCommand, Command

if TYPE_CHECKING:
    from hermes_core import Part
    from hermes_pi.host import PiHost

SURFACE = "pi"
BUSY = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."


def notify(host: PiHost, message: str, kind: str = "info") -> None:
    """Send a fire-and-forget ``notify`` dialog."""
    host.send(
        {
            "type": "extension_ui_request",
            "id": str(uuid.uuid4()),
            "method": "notify",
            "message": message,
            "notifyType": kind,
        }
    )


async def prompt(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``prompt``: start a run, queue the text while one runs, or run a slash command."""
    parts = cmd.content()
    behavior = cmd.raw.get("streamingBehavior")
    if behavior is not None and behavior not in ("steer", "followUp"):
        raise BadCommand("prompt: streamingBehavior must be steer or followUp")
    text = cmd.text("message", allow_empty=True)
    if text.lstrip().startswith("/") and not any(isinstance(p, ImagePart) for p in parts):
        disposition = await _slash(host, text.strip())
        if disposition is not None:
            return {"disposition": disposition}
    if host.stream.active:
        if behavior == "steer":
            await host.steer(parts)
        elif behavior == "followUp":
            await host.follow_up(parts)
        else:
            raise BadCommand(BUSY)
        return {"disposition": "queued"}
    await host.start_run(parts)
    return {"disposition": "started"}


async def _slash(host: PiHost, text: str) -> str | None:
    """Run a registered slash command; None when the text names none."""
    name = text[1:].split(None, 1)[0] if len(text) > 1 else ""
    spec = host.kernel.registry.command(name)
    if spec is None or spec.needs_terminal_ui:
        return None
    session = host.session
    try:
        result = await host.kernel.dispatch_slash(session, text, surface=SURFACE)
    except CommandNotAvailable:
        notify(host, f"/{spec.name} is not available here.", "warning")
        return "handled"
    except HermesError as exc:
        notify(host, host.kernel.redactor(str(exc)), "error")
        return "handled"
    if result is None:
        return None
    output = result.output or (result.message if result.kind != "send" else None)
    if output:
        notify(host, output)
    if result.kind == "send":
        stored = (result.data or {}).get("parts")
        parts: list[Part] = list(stored) if stored else [TextPart(result.message or "")]
        if host.stream.active:
            await host.follow_up(parts)
            return "queued"
        await host.start_run(parts)
        return "started"
    return "handled"


async def steer(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``steer``: guidance delivered before the next model call of the run."""
    await host.steer(cmd.content())
    return {"disposition": "queued"}


async def follow_up(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``follow_up``: a message run after the current run's work."""
    await host.follow_up(cmd.content())
    return {"disposition": "queued"}


async def abort(host: PiHost, cmd: Command) -> None:
    """``abort``: stop the run and answer once it has settled."""
    await host.abort()


async def clear_queue(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``clear_queue``: empty both queues, returning their texts."""
    return host.clear_queue()
