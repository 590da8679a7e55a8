"""A cancel that reaches a row's write never cuts it short: the caller hears of the cancel once
the row is stored, and the session knows the row (the user row of an interrupted first turn too)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from hermes_core import NewRow, StorageSpec, TurnCompleted, hookimpl
from hermes_core.memory_storage import MemoryStorage
from hermes_core.storage import SessionRecord
from hermes_core.testing import make_kernel
from tests.core.conftest import collect


class SlowWrites(MemoryStorage):
    """Stores rows (and new sessions) slowly, and says when a write began."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = asyncio.Event()
        self.release = asyncio.Event()

    async def _slow(self) -> None:
        self.writing.set()
        await self.release.wait()

    async def create_session(self, record: SessionRecord, rows: Sequence[NewRow] = ()) -> list[int]:
        ids = await super().create_session(record, rows)  # committed first, as a database would
        await self._slow()
        return ids

    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        ids = await super().append_rows(session_id, rows)
        await self._slow()
        return ids


def _kernel(store: SlowWrites, tmp_path: Path):  # type: ignore[no-untyped-def]
    class Backend:
        @hookimpl
        def hermes_storage_backends(self) -> StorageSpec:
            return StorageSpec(name="slow", factory=lambda path, **_: store)

    return make_kernel(
        Backend(),
        entry_points=["mock"],
        settings={"model": "mock:echo", "data_dir": str(tmp_path), "storage": {"backend": "slow"}},
    )


async def test_a_cancelled_append_waits_for_the_write_and_keeps_the_row(tmp_path: Path) -> None:
    store = SlowWrites()
    kernel = _kernel(store, tmp_path)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        writing = asyncio.ensure_future(session.append_rows([NewRow(role="user", content="kept")]))
        await store.writing.wait()
        writing.cancel()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not writing.done()  # the cancel waits for the write
        store.release.set()
        with pytest.raises(asyncio.CancelledError):
            await writing
        stored = await store.load_rows(session.id)
        assert [r.content for r in stored] == ["kept"]
        assert [r.id for r in session.rows] == [stored[0].id]


async def test_an_interrupt_during_the_user_rows_write_keeps_the_row(tmp_path: Path) -> None:
    store = SlowWrites()
    kernel = _kernel(store, tmp_path)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        turn = await session.submit("hello there", owner="me")
        events = asyncio.ensure_future(collect(turn))
        await store.writing.wait()
        interrupting = asyncio.ensure_future(session.interrupt(reason="user"))
        await asyncio.sleep(0.05)
        store.release.set()
        await interrupting
        done = (await events)[-1]
        assert isinstance(done, TurnCompleted) and done.outcome.status == "interrupted", done.outcome
        stored = await store.load_rows(session.id)
        assert [r.content for r in stored if r.role == "user"] == ["hello there"]
        assert done.user_row_id == stored[0].id
        assert [r.id for r in session.rows] == [r.id for r in stored]
