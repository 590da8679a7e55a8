"""Commands that change a session: ``/title``, ``/compress``, ``/branch`` (``/fork``) and ``/stop``.

Each is a thin layer over the ``Session`` API: it reads the arguments, calls the core and says
what happened. Core errors (``InvalidValue``, ``SessionBusy``, ``StorageError``) propagate for
the transport to map.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import CommandResult
from hermes_slash.common import plural, session_of

if TYPE_CHECKING:
    from hermes_core import CommandContext


async def title_command(ctx: CommandContext) -> CommandResult:
    """Run ``/title [TEXT]``: show the title, or set an explicit one.

    :param ctx: the dispatch context; ``args`` is the new title, if any.
    :returns: the title (``data.title``; ``data.pending`` when it waits for the first message).
    :raises InvalidValue: the title is longer than 200 characters or has control characters.
    """
    session = session_of(ctx)
    text = ctx.args.strip()
    if not text:
        title = session.info().title
        output = f"Title: {title}" if title else "This session has no title yet; /title TEXT sets one."
        return CommandResult(kind="exec", output=output, data={"title": title})
    result = await session.set_title(text)
    suffix = " (saved with the first message)" if result.pending else ""
    return CommandResult(
        kind="exec",
        output=f"Title set to: {result.title}{suffix}",
        data={"title": result.title, "pending": result.pending},
    )


async def compress_command(ctx: CommandContext) -> CommandResult:
    """Run ``/compress [FOCUS]``: summarise every turn before the latest one into one row.

    The session keeps its id and the surviving rows keep theirs
    (docs/reference/core.md#branch-compress-titles-model-switch).

    :param ctx: the dispatch context; ``args`` is an optional focus topic for the summary.
    :returns: how many messages were summarised; ``data`` mirrors the core's result.
    """
    session = session_of(ctx)
    focus = ctx.args.strip() or None
    result = await session.compress(focus_topic=focus, charge=ctx.charge)
    data = {
        "summary_row_id": result.summary_row_id,
        "archived": result.archived,
        "messages_before": result.messages_before,
        "messages_after": result.messages_after,
        "summary": result.summary,
        "focus": focus,
    }
    if result.summary_row_id is None:
        output = "Nothing to compress yet: the latest turn is always kept, so at least two turns are needed."
    else:
        output = (
            f"Summarised {plural(result.archived, 'message')} into one summary; the conversation "
            f"now shows {plural(result.messages_after, 'message')} (was {result.messages_before})."
        )
    return CommandResult(kind="exec", output=output, data=data)


async def branch_command(ctx: CommandContext) -> CommandResult:
    """Run ``/branch [TITLE]`` (alias ``/fork``): copy the conversation into a new session.

    The new session is opened in this kernel and stays open (it holds its writer lease): the
    caller decides whether to switch to it (``kernel.live_session(data["session_id"])``) or to
    close it. The current session is left as it was.

    :param ctx: the dispatch context; ``args`` is the new session's title, if any (else the
        core names it ``"<title> (branch)"``).
    :returns: the new session's id (``data.session_id``), title and copied message count.
    :raises InvalidValue: the title is not acceptable.
    """
    session = session_of(ctx)
    title = ctx.args.strip() or None
    child = await session.branch(owner=session.record.source or "cli", title=title)
    info = child.info()
    copied = len(await child.history())
    output = (
        f"Branched into new session {child.id}: {info.title!r} ({plural(copied, 'message')} copied). "
        "This session is unchanged."
    )
    data = {
        "session_id": child.id,
        "title": info.title,
        "parent_session_id": session.id,
        "messages": copied,
    }
    return CommandResult(kind="exec", output=output, data=data)


async def stop_command(ctx: CommandContext) -> CommandResult:
    """Run ``/stop``: interrupt the running turn and keep the queue (docs/reference/core.md#interrupt).

    :param ctx: the dispatch context.
    :returns: whether a turn was running (``data.was_running``) and how many prompts wait.
    """
    session = session_of(ctx)
    result = await session.interrupt(reason="user", discard_queue=False)
    queued = session.info().queued
    output = "Stopped the running turn." if result.was_running else "Nothing is running."
    if queued:
        output += f" {plural(queued, 'queued prompt')} will still run."
    return CommandResult(
        kind="exec", output=output, data={"was_running": result.was_running, "queued": queued}
    )
