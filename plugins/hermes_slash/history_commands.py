"""``/history``, ``/undo`` and ``/retry``: read the projected transcript or rewind its last turn.

``/undo`` and ``/retry`` are the core's rewinds (``Session.undo``,
docs/reference/core.md#rewind-and-reconcile) whose consent is the typed command: the last user turn and
everything after it are soft-archived, never deleted. ``/retry`` then hands the same prompt back as a ``send``
directive, so each transport runs it as a new turn its own way (the CLI streams it, the TUI host calls
``prompt.submit``). The prompt's images come back too, in ``data.parts``: the core decides per turn whether
the model sees them (docs/reference/core.md#images drops them, with a warning, for a model without vision).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import CommandResult, CommandUsageError, ImagePart, RewindError, cut_off_reason
from hermes_slash.common import plural, session_of

if TYPE_CHECKING:
    from hermes_core import CommandContext, Row

HISTORY_USAGE = "/history [COUNT]"
DEFAULT_COUNT = 20
MAX_LINE = 100


def _speaker(row: Row) -> str:
    if row.display_kind == "summary":
        return "Summary"
    if row.role == "user":
        return "You"
    if row.role == "assistant":
        return "Hermes"
    if row.role == "tool":
        return f"Tool {row.tool_name or ''}".rstrip()
    return row.role.capitalize()


def _cut_mark(row: Row) -> str:
    """Return `` (cut off)`` for a reply that stopped before it was finished."""
    return " (cut off)" if cut_off_reason(row) is not None else ""


def _brief(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_LINE else flat[: MAX_LINE - 1] + "…"


def _is_user_turn(row: Row) -> bool:
    return row.role == "user" and row.display_kind is None


async def history_command(ctx: CommandContext) -> CommandResult:
    """Run ``/history [COUNT]``: the last COUNT projected messages, one short line each.

    :param ctx: the dispatch context; ``args`` may be a positive count (default 20).
    :returns: the lines; ``data.messages`` holds ``row_id``, ``role``, ``display_kind`` and the
        full ``text`` of each shown row (plus ``cut_off`` for a reply that stopped early),
        ``data.total`` the projection's length.
    :raises CommandUsageError: the count is not a positive whole number.
    """
    session = session_of(ctx)
    arg = ctx.args.strip()
    if arg and (not arg.isdigit() or int(arg) < 1):
        raise CommandUsageError(
            HISTORY_USAGE, f"COUNT must be a positive whole number; usage: {HISTORY_USAGE}"
        )
    count = int(arg) if arg else DEFAULT_COUNT
    rows = await session.history()
    shown = rows[-count:]
    messages: list[dict[str, Any]] = [
        {"row_id": r.id, "role": r.role, "display_kind": r.display_kind, "text": r.content} for r in shown
    ]
    for message, row in zip(messages, shown, strict=True):
        cut = cut_off_reason(row)
        if cut is not None:
            message["cut_off"] = cut
    if not rows:
        return CommandResult(kind="exec", output="No messages yet.", data={"messages": [], "total": 0})
    lines = [f"{_speaker(r)}{_cut_mark(r)}: {_brief(r.content) or '(no text)'}" for r in shown]
    if len(rows) > len(shown):
        lines.insert(0, f"… {plural(len(rows) - len(shown), 'earlier message')} not shown")
    return CommandResult(
        kind="exec", output="\n".join(lines), data={"messages": messages, "total": len(rows)}
    )


async def _rewind_last(ctx: CommandContext) -> tuple[Row, dict[str, Any]]:
    """Undo the last user turn; return that row and the rewind's facts."""
    session = session_of(ctx)
    before = await session.history()
    last = next((r for r in reversed(before) if _is_user_turn(r)), None)
    if last is None:
        raise RewindError(4018, "there is no user turn to undo", {"user_turn_count": 0})
    result = await session.undo()
    data: dict[str, Any] = {
        "archived": result.archived,
        # What the user saw go: hidden marker rows are archived too but never shown.
        "removed_messages": len(before) - len(await session.history()),
        "survivor_user_row_ids": list(result.survivor_user_row_ids),
        "removed_row_id": last.id,
        "text": last.content,
    }
    return last, data


async def undo_command(ctx: CommandContext) -> CommandResult:
    """Run ``/undo``: soft-archive the last user turn and every message after it.

    :param ctx: the dispatch context.
    :returns: what was removed; ``data`` holds ``archived`` (every row, hidden markers too),
        ``removed_messages`` (the shown ones), ``survivor_user_row_ids``, ``removed_row_id`` and
        the removed prompt's ``text``.
    :raises SessionBusy: a turn is running or prompts wait.
    :raises RewindError: there is no user turn to undo (code 4018).
    """
    last, data = await _rewind_last(ctx)
    output = (
        f"Removed your last message and what followed ({plural(data['removed_messages'], 'message')}): "
        f"{_brief(last.content)}"
    )
    return CommandResult(kind="exec", output=output, data=data)


async def retry_command(ctx: CommandContext) -> CommandResult:
    """Run ``/retry``: undo the last user turn, then send the same prompt again as a new turn.

    :param ctx: the dispatch context.
    :returns: a ``send`` directive whose ``message`` is the removed prompt's text; ``data`` is as
        for ``/undo`` plus ``images`` (how many the prompt had) and ``parts``: when it had any,
        its stored content parts (text and images), which a transport submits instead of
        ``message`` so the images go again; empty for a text-only prompt.
    :raises SessionBusy: a turn is running or prompts wait.
    :raises RewindError: there is no user turn to retry (code 4018).
    """
    last, data = await _rewind_last(ctx)
    images = sum(isinstance(p, ImagePart) for p in last.parts)
    # The stored parts already hold the text part beside the images; a text-only row has none.
    data["parts"] = tuple(last.parts) if images else ()
    data["images"] = images
    display: dict[str, Any] = {"text": last.content, "retry": True}
    with_images = ""
    if images:
        display["images"] = images
        with_images = f" (with {plural(images, 'image')})"
    return CommandResult(
        kind="send",
        message=last.content,
        output=f"Sending your last message again{with_images}: {_brief(last.content)}",
        display=display,
        data=data,
    )
