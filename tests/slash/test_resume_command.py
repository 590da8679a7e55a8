"""``/resume`` (docs/slash-commands.md#resume): list the saved sessions, find one by id or title."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import CommandUsageError, Kernel, Session

from .helpers import data, reply, run


async def _saved(kernel: Kernel, workspace: Path, text: str, title: str | None = None) -> str:
    session = await kernel.open_session(source="cli", owner="t", cwd=workspace)
    await reply(session, text)
    if title is not None:
        await session.set_title(title)
    await session.close()
    return session.id


async def test_lists_saved_sessions_newest_first(kernel: Kernel, session: Session, workspace: Path) -> None:
    empty = await run(kernel, None, "/resume")
    assert empty.output == "No saved sessions yet." and data(empty)["sessions"] == []
    first = await _saved(kernel, workspace, "first question", title="Parser work")
    second = await _saved(kernel, workspace, "second question")
    await reply(session, "the current one")
    listed = await run(kernel, session, "/resume")
    lines = (listed.output or "").splitlines()
    assert lines[0] == "Saved sessions, most recent first:"
    assert [line.split()[0] for line in lines[1:-1]] == [session.id, second, first]
    assert lines[1].endswith("(this session)")
    assert "Parser work" in lines[3] and "2 messages" in lines[3]
    assert "second question" in lines[2]  # untitled: the first message stands in
    assert lines[-1] == "Resume one with /resume ID or /resume TITLE."
    entries = data(listed)["sessions"]
    assert [e["id"] for e in entries] == [session.id, second, first]
    assert entries[2]["title"] == "Parser work" and entries[2]["message_count"] == 2


async def test_finds_a_session_by_id_or_title(kernel: Kernel, session: Session, workspace: Path) -> None:
    first = await _saved(kernel, workspace, "first question", title="Parser work")
    by_title = await run(kernel, session, "/resume Parser work")
    assert data(by_title) == {"action": "resume_session", "session_id": first, "title": "Parser work"}
    assert by_title.output == f"Resuming session {first} (Parser work)."
    by_id = await run(kernel, session, f"/resume {first}", surface="cli")
    assert data(by_id)["session_id"] == first
    assert (
        by_id.output
        == f'Session {first} (Parser work): continue it with hermes run --session {first} "PROMPT".'
    )
    acp = await run(kernel, session, f"/resume {first}", surface="acp")
    assert "open it from your editor's session list" in (acp.output or "")
    with pytest.raises(CommandUsageError, match="no saved session has the id or title 'nothing'"):
        await run(kernel, session, "/resume nothing")
    await reply(session, "hello")
    here = await run(kernel, session, f"/resume {session.id}")
    assert here.output == f"Already in session {session.id} (hello)." and data(here)["action"] is None
