"""``Session.undo`` (the rewind behind ``/undo`` and ``/retry``) and ``Session.hidden_tools``.

Run on SQLite (so the archive survives a restart) and on memory storage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import Kernel, RewindError, SessionBusy, TextDelta
from hermes_core.testing import make_kernel

from .conftest import collect


@pytest.fixture(params=["sqlite", "memory"])
async def k(request: Any, tmp_path: Path) -> AsyncIterator[Kernel]:
    storage = (
        {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}
        if request.param == "sqlite"
        else {"backend": "memory"}
    )
    kernel = make_kernel(entry_points=["mock", "sqlite"], settings={"model": "mock:echo", "storage": storage})
    async with kernel.running():
        yield kernel


async def _turn(session: Any, text: str) -> None:
    await collect(await session.submit(text, owner="t"))


async def test_undo_archives_the_last_user_turn_and_what_follows(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    for text in ("one", "two"):
        await _turn(session, text)
    await session.switch_model("mock:alt")
    first = (await session.history())[0].id
    result = await session.undo()
    assert result.survivor_user_row_ids == [first]
    # The user row, the reply and the model-switch marker after them.
    assert result.archived == 3
    assert result.target_ordinal == 1
    assert [r.content for r in await session.history()] == ["one", "You said: one"]
    archived = [r for r in await session.history(include_archived=True) if not r.active]
    assert [r.archived_reason for r in archived] == ["rewind"] * 3
    second = await session.undo()
    assert (second.survivor_user_row_ids, second.archived) == ([], 2)
    assert await session.history() == []


async def test_undo_with_nothing_to_undo_is_a_4018(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    with pytest.raises(RewindError) as caught:
        await session.undo()
    assert caught.value.code == 4018


async def test_undo_while_busy_raises_session_busy_and_changes_nothing(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await _turn(session, "kept")
    running = await session.submit("[[delay 200]] a b c", owner="t")
    async for event in running.events():
        if isinstance(event, TextDelta):
            break
    with pytest.raises(SessionBusy) as caught:
        await session.undo()
    assert caught.value.reason == "busy"
    await running.outcome
    assert len(await session.history()) == 4


async def test_hidden_tools_reflects_the_tool_filter(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    assert session.hidden_tools == frozenset()
    session.set_tool_filter(frozenset({"terminal"}))
    assert session.hidden_tools == frozenset({"terminal"})
