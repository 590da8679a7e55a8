"""A turn's reply and the session's new usage total are stored in one write (one transaction),
and a storage without that write still gets both (docs/reference/core.md#the-turn-loop)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hermes_core import StorageSpec, TurnCompleted, hookimpl
from hermes_core.memory_storage import MemoryStorage
from hermes_core.providers import FinishChunk, TextChunk, UsageChunk
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel
from tests.core.conftest import collect


def _replies() -> FakeProvider:
    return FakeProvider(lambda request: [TextChunk("the answer"), UsageChunk(10, 5), FinishChunk("stop")])


def _spy(storage: Any, name: str, calls: list[tuple[str, Any]]) -> None:
    original = getattr(storage, name)

    async def spied(*args: Any, **kwargs: Any) -> Any:
        calls.append((name, args))
        return await original(*args, **kwargs)

    setattr(storage, name, spied)


async def test_the_reply_and_the_usage_total_are_one_transaction(tmp_path: Path) -> None:
    kernel = make_kernel(
        FakeProviderPlugin(_replies()),
        entry_points=["sqlite"],
        settings={"model": "fake:model", "data_dir": str(tmp_path), "storage": {"backend": "sqlite"}},
    )
    calls: list[tuple[str, Any]] = []
    async with kernel.running():
        for name in ("append_rows", "append_rows_and_update", "update_session"):
            _spy(kernel.storage, name, calls)
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        events = await collect(await session.submit("first question", owner="me"))
        assert isinstance(events[-1], TurnCompleted) and events[-1].outcome.status == "complete"
        events = await collect(await session.submit("second question", owner="me"))
        assert isinstance(events[-1], TurnCompleted) and events[-1].outcome.status == "complete"
        session_id = session.id
    # The first turn's prompt created the session; each reply came with the total, in one call,
    # and no separate update of the total followed.
    assert [name for name, _ in calls] == ["append_rows_and_update", "append_rows", "append_rows_and_update"]
    usage = calls[-1][1][2]["usage"]
    assert (usage["input"], usage["output"], usage["calls"]) == (20, 10, 2)
    # What a reader of the file sees afterwards: both replies, and the total of both turns.
    with sqlite3.connect(tmp_path / "hermes.sqlite3") as conn:
        (stored,) = conn.execute("SELECT usage FROM sessions WHERE id = ?", (session_id,)).fetchone()
        replies = conn.execute(
            "SELECT content, input_tokens, output_tokens FROM messages WHERE session_id = ? "
            "AND role = 'assistant' ORDER BY id",
            (session_id,),
        ).fetchall()
    assert {k: json.loads(stored)[k] for k in ("input", "output", "calls")} == {
        "input": 20,
        "output": 10,
        "calls": 2,
    }
    assert replies == [("the answer", 10, 5), ("the answer", 10, 5)]


class _AppendThenUpdate(MemoryStorage):
    """A backend without the combined write (the optional method is not offered)."""

    append_rows_and_update = None  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def append_rows(self, session_id: str, rows: Any) -> list[int]:
        self.calls.append("append_rows")
        return await super().append_rows(session_id, rows)

    async def update_session(self, session_id: str, fields: Any) -> None:
        self.calls.append(f"update_session {sorted(fields)}")
        await super().update_session(session_id, fields)


async def test_a_storage_without_the_combined_write_gets_the_reply_then_the_total(tmp_path: Path) -> None:
    store = _AppendThenUpdate()

    class Backend:
        @hookimpl
        def hermes_storage_backends(self) -> StorageSpec:
            return StorageSpec(name="plain", factory=lambda path, **_: store)

    kernel = make_kernel(
        FakeProviderPlugin(_replies()),
        Backend(),
        settings={"model": "fake:model", "data_dir": str(tmp_path), "storage": {"backend": "plain"}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        await collect(await session.submit("first question", owner="me"))
        store.calls.clear()
        await collect(await session.submit("second question", owner="me"))
        assert store.calls == ["append_rows", "append_rows", "update_session ['usage']"]
        got = await store.get_session(session.id)
        assert got is not None and (got.usage["input"], got.usage["output"]) == (20, 10)
