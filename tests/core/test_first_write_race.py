"""Writes racing a new session's first write: each one lands, in order, none is refused.

A new session is stored by its first write. Before, a second write started while the first was
under way saw the session not stored yet and tried to create it too ("session … already exists",
an internal error to the editor: two quick model changes on a new ACP session did it), and a
record change made meanwhile was lost when the first write finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes_core import Kernel, NewRow, Session
from hermes_core.testing import make_kernel


def sqlite_kernel(tmp_path: Path) -> Kernel:
    return make_kernel(
        entry_points=["mock", "tools", "sqlite"],
        settings={"storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}},
    )


class HeldCreate:
    """Holds storage's session-creating calls until :meth:`release`, so that other writes start
    while the first is under way (SQLite would otherwise finish a small one before they do)."""

    def __init__(self, kernel: Kernel, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.gate = asyncio.Event()
        storage = kernel.storage
        for name in ("create_session", "create_leased_session"):
            monkeypatch.setattr(storage, name, self._held(getattr(storage, name)))

    def _held(self, real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def create(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            await self.gate.wait()
            return await real(*args, **kwargs)

        return create

    async def release(self) -> None:
        for _ in range(20):  # let every task started so far reach its first wait
            await asyncio.sleep(0)
        self.gate.set()


@dataclass
class NewSession:
    kernel: Kernel
    session: Session
    held: HeldCreate


@pytest.fixture
async def new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[NewSession]:
    """A new session on SQLite, not stored yet, whose first write is held (see HeldCreate)."""
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        yield NewSession(kernel, session, HeldCreate(kernel, monkeypatch))


async def test_two_model_switches_on_a_new_session_both_land(new: NewSession) -> None:
    kernel, session, held = new.kernel, new.session, new.held
    both = asyncio.gather(session.switch_model("mock:echo"), session.switch_model("mock:script"))
    await held.release()
    first, second = await both
    assert held.calls == 1
    assert (first.ref, second.ref) == ("mock:echo", "mock:script")
    assert session.record.model == "mock:script"
    stored = await kernel.sessions.stored(session.id)
    assert stored.record.model == "mock:script"


async def test_rows_written_together_on_a_new_session_are_all_stored_in_order(new: NewSession) -> None:
    kernel, session, held = new.kernel, new.session, new.held
    writes = asyncio.gather(
        *(session.append_rows([NewRow(role="user", content=f"row {n}")]) for n in range(4))
    )
    await held.release()
    made = await writes
    assert held.calls == 1
    ids = [rows[0].id for rows in made]
    assert ids == sorted(ids)
    assert [r.content for r in session.rows] == [f"row {n}" for n in range(4)]
    stored = await kernel.sessions.stored(session.id)
    assert [r.content for r in stored.rows] == [f"row {n}" for n in range(4)]


async def test_a_record_change_during_the_first_write_is_kept(new: NewSession) -> None:
    kernel, session, held = new.kernel, new.session, new.held
    writing = session.start_append([NewRow(role="user", content="first")])
    changing = asyncio.ensure_future(session.set_system_overlay("be brief"))
    await held.release()
    await asyncio.gather(writing, changing)
    assert session.record.system_overlay == "be brief"
    stored = await kernel.sessions.stored(session.id)
    assert stored.record.system_overlay == "be brief"
