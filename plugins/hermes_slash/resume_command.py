"""``/resume``: list the saved conversations, or pick one by id or title to go on with.

The command finds the session; opening it is the surface's part, because only the surface knows
how it switches sessions: the TUI gateway binds it to the caller as ``session.resume`` does,
``hermes run`` names the ``--session`` to continue it with, and an ACP editor opens it from its
own session list (``session/load``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from hermes_core import CommandResult, CommandUsageError
from hermes_slash.common import plural

if TYPE_CHECKING:
    from hermes_core import CommandContext, SessionRecord

USAGE = "/resume [ID | TITLE]"
LISTED = 20
TITLE_CHARS = 60


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M") if timestamp else "-"


def _entry(record: SessionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "title": record.title,
        "preview": record.preview,
        "message_count": record.message_count,
        "updated_at": record.updated_at or record.created_at,
        "source": record.source,
    }


def _line(record: SessionRecord, current: str | None) -> str:
    title = record.title or record.preview or "(untitled)"
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1] + "…"
    mark = "  (this session)" if record.id == current else ""
    count = plural(record.message_count, "message")
    return f"  {record.id}  {title}  ·  {count}, {_when(record.updated_at or record.created_at)}{mark}"


async def resume_command(ctx: CommandContext) -> CommandResult:
    """Run ``/resume``: without an argument, list recent sessions; with one, find that session.

    :param ctx: the dispatch context.
    :returns: the list (``data.sessions``), or ``data.action == "resume_session"`` with the
        session's ``session_id`` and ``title`` for the surface to open.
    :raises CommandUsageError: no stored session has that id or title.
    """
    current = ctx.session.id if ctx.session is not None else None
    wanted = ctx.args.strip()
    sessions = ctx.kernel.sessions
    if not wanted:
        page = await sessions.list(limit=LISTED + 1 if ctx.sees is None else 1000)
        records = [r for r in page.sessions if r.source != "tool"]
        if ctx.sees is not None:
            shown = await ctx.sees([r.id for r in records])
            records = [r for r in records if r.id in shown]
        records = records[:LISTED]
        if not records:
            return CommandResult(kind="exec", output="No saved sessions yet.", data={"sessions": []})
        lines = ["Saved sessions, most recent first:"]
        lines += [_line(r, current) for r in records]
        lines.append("Resume one with /resume ID or /resume TITLE.")
        return CommandResult(
            kind="exec", output="\n".join(lines), data={"sessions": [_entry(r) for r in records]}
        )
    record = await sessions.lookup(wanted)
    if record is not None and ctx.sees is not None and record.id not in await ctx.sees([record.id]):
        record = None  # another tenant's: as if there were none
    if record is None or record.source == "tool":
        raise CommandUsageError(USAGE, f"no saved session has the id or title {wanted!r}; /resume lists them")
    data: dict[str, Any] = {"action": "resume_session", "session_id": record.id, "title": record.title}
    named = f"{record.id}" + (f" ({record.title})" if record.title else "")
    if record.id == current:
        output = f"Already in session {named}."
        data["action"] = None
    elif ctx.surface == "cli":
        # `hermes run` holds one session per process: the next run continues the one found.
        output = f'Session {named}: continue it with hermes run --session {record.id} "PROMPT".'
    elif ctx.surface == "acp":
        output = (
            f"Session {named} is saved; open it from your editor's session list "
            "(the editor owns its sessions, so the agent cannot switch to it)."
        )
    else:
        output = f"Resuming session {named}."
    return CommandResult(kind="exec", output=output, data=data)
