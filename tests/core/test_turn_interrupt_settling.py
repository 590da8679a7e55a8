"""An interrupt that arrives while the turn stores its final reply does not cut the write short:
the reply is stored once, the session knows its row, and the turn completes (before, the row could
be committed while the session never learned its id, so no later step could find or mark it)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from hermes_core import NewRow, StorageSpec, TurnCompleted, hookimpl
from hermes_core.memory_storage import MemoryStorage
from hermes_core.testing import make_kernel
from tests.core.conftest import collect


class SlowReplies(MemoryStorage):
    """Stores a reply slowly, and says when it began."""

    def __init__(self) -> None:
        super().__init__()
        self.storing = asyncio.Event()

    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        ids = await super().append_rows(session_id, rows)  # committed first, as a database would
        if any(row.role == "assistant" for row in rows):
            self.storing.set()
            await asyncio.sleep(0.3)  # the answer of the commit is on its way back
        return ids


STORE = SlowReplies()


class Backend:
    @hookimpl
    def hermes_storage_backends(self) -> StorageSpec:
        return StorageSpec(name="slow", factory=lambda path, **_: STORE)


async def test_an_interrupt_while_the_reply_is_stored_leaves_one_known_complete_reply(tmp_path: Path) -> None:
    kernel = make_kernel(
        Backend(),
        entry_points=["mock"],
        settings={"model": "mock:echo", "data_dir": str(tmp_path), "storage": {"backend": "slow"}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        turn = await session.submit("hello there", owner="me")
        events = asyncio.ensure_future(collect(turn))
        await STORE.storing.wait()
        await session.interrupt(reason="user")
        done = (await events)[-1]
        assert isinstance(done, TurnCompleted) and done.outcome.status == "complete", done.outcome
        stored = [r for r in await STORE.load_rows(session.id) if r.role == "assistant"]
        assert [r.content for r in stored] == ["You said: hello there"]
        assert done.assistant_row_id == stored[0].id
        assert [r.id for r in session.rows if r.role == "assistant"] == [stored[0].id]
