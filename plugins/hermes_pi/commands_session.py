"""pi's session commands: new_session, switch_session, fork, clone, get_fork_messages,
get_entries, get_tree, export_html (docs/reference/pi.md#sessions, #entries-and-the-tree).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import SessionInUse, SessionNotFound, expand_home
from hermes_pi import entries, export, locator
from hermes_pi.commands_state import messages
from hermes_pi.dispatch import RawData
from hermes_pi.host import OWNER
from hermes_pi.wire import BadCommand, Command

if TYPE_CHECKING:
    from hermes_core import Session
    from hermes_pi.host import PiHost


async def resolve(host: PiHost, target: str) -> Session:
    """Open the session a ``--session`` value or ``sessionPath`` names.

    A path names its session by the locator's header or the file name (a new id creates that
    session); anything else is an id or an exact title of a stored session.

    :raises SessionNotFound: no stored session has that id or title.
    :raises SessionInUse: another Hermes process holds it.
    """
    if locator.looks_like_path(target):
        session_id = await asyncio.to_thread(locator.id_from_path, expand_home(target))
        return await host.open_session(session_id)
    live = host.kernel.live_session(target)
    if live is not None:
        return live
    return await host.kernel.sessions.resume(target, owner=OWNER)


async def new_session(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``new_session``: a fresh session in the same workspace (``parentSession`` recorded)."""
    parent = cmd.optional_text("parentSession")
    parent_id = None
    if parent:
        parent_id = locator.id_from_path(Path(parent)) if locator.looks_like_path(parent) else parent
    session = await host.open_session(parent_session_id=parent_id)
    await host.replace(session)
    return {"cancelled": False}


async def switch_session(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``switch_session``: continue another stored session (its events come from now on)."""
    target = cmd.text("sessionPath")
    try:
        session = await resolve(host, target)
    except SessionNotFound:
        raise BadCommand(f"No session found matching '{target}'") from None
    except SessionInUse:
        raise BadCommand(f"Session '{target}' is open in another Hermes process") from None
    await host.replace(session)
    return {"cancelled": False}


def _user_rows(session: Session) -> list[Any]:
    return [r for r in session.rows if r.role == "user" and r.display_kind is None]


async def fork(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``fork``: a new session with the history before a user message; returns that message's text."""
    entry_id = cmd.text("entryId")
    session = host.session  # the entry belongs to this session, whatever replaces it meanwhile
    target = next((r for r in _user_rows(session) if str(r.id) == entry_id), None)
    if target is None:
        raise BadCommand(f"Entry {entry_id} is not a user message on the current branch")
    if host.stream.active:
        await host.abort()
    earlier = [r for r in session.rows if (r.position, r.id) < (target.position, target.id)]
    if earlier:
        last = max(earlier, key=lambda r: (r.position, r.id))
        child = await session.branch(owner=OWNER, up_to_row_id=last.id)
    else:
        child = await session.branch(owner=OWNER, count=0)
    await host.replace(child)
    return {"text": target.content, "cancelled": False}


async def clone(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``clone``: a new session with the whole current branch."""
    session = host.session
    if not session.rows:
        raise BadCommand("Cannot clone session: no current entry selected")
    if host.stream.active:
        await host.abort()
    child = await session.branch(owner=OWNER)
    await host.replace(child)
    return {"cancelled": False}


async def get_fork_messages(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_fork_messages``: the user messages a fork can start from."""
    return {"messages": [{"entryId": str(r.id), "text": r.content} for r in _user_rows(host.session)]}


async def _entries(host: PiHost) -> tuple[list[dict[str, Any]], str | None]:
    rows = await host.session.history(include_archived=True, replay=True)
    return entries.build(rows, host.kernel.redactor.obj)


async def get_entries(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_entries``: every entry in append order, or those after the ``since`` entry."""
    cursor = cmd.optional_text("since")
    found, leaf = await _entries(host)
    if cursor is not None:
        after = entries.since(found, cursor)
        if after is None:
            raise BadCommand(f"Entry not found: {cursor}")
        found = after
    return {"entries": found, "leafId": leaf}


async def get_tree(host: PiHost, cmd: Command) -> RawData:
    """``get_tree``: the entries as a tree (encoded without recursion)."""
    found, leaf = await _entries(host)
    tree = entries.encode_tree(found)
    return RawData(f'{{"tree":{tree},"leafId":{"null" if leaf is None else entries.json_string(leaf)}}}')


async def export_html(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``export_html``: write the session as an HTML page; returns its path."""
    target = cmd.optional_text("outputPath")
    session = host.session
    path = expand_home(target) if target else Path(f"hermes-session-{session.id}.html")
    if not path.is_absolute():
        path = session.cwd / path
    info = session.info()
    page = export.render(info.title or "Hermes session", session.id, info.model, await messages(host))
    try:
        await asyncio.to_thread(path.write_text, page, "utf-8")
    except OSError as exc:
        raise BadCommand(f"Cannot write {path}: {exc.strerror or exc}") from None
    return {"path": str(path)}
