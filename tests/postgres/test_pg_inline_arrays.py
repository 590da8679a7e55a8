"""Multi-row writes bind short arrays as scalars (hermes_postgres/inline.py) and long ones as
lists, with the same rows stored either way."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from hermes_core import ChunkWrite, EventChunk, NewRow, SessionRecord, StoredToolCall
from hermes_postgres import inline
from hermes_postgres.plugin import make_storage


def _rows(n: int) -> list[NewRow]:
    call = StoredToolCall("", f"call_{n}", "read_file", '{"path": "a"}')
    return [
        NewRow(role="assistant", content=f"row {i}", tool_calls=(call,), input_tokens=i, output_tokens=None)
        if i % 2
        else NewRow(role="user", content=f"row {i}", position=None if i else 7, model="m", meta={"k": i})
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [0, 1, 2, inline.MOST, inline.MOST + 1, 9])
async def test_sessions_and_rows_of_any_count_are_stored_whole(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    store = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    lists: list[int] = []
    real = psycopg.AsyncCursor.execute

    async def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        lists.append(sum(isinstance(p, list) for p in params or ()))
        return await real(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
    try:
        ids = await store.create_session(SessionRecord(id="s1", source="api", cwd="/", profile="p"), _rows(n))
        # Up to MOST rows no parameter is a list; beyond, one list per column.
        assert lists == [0 if n <= inline.MOST else 15]
        assert len(ids) == n
        more = await store.rewrite("s1", append=_rows(n))
        assert len(more) == n
        got = sorted(await store.load_rows("s1"), key=lambda r: r.id)  # row 0 has its own position
        assert [r.id for r in got] == sorted([*ids, *more])
        want = _rows(n)
        for stored, new in zip(got[:n], want, strict=True):
            assert (stored.role, stored.content, stored.model, stored.meta) == (
                new.role,
                new.content,
                new.model,
                new.meta,
            )
            assert (stored.input_tokens, stored.output_tokens) == (new.input_tokens, new.output_tokens)
            assert [c.name for c in stored.tool_calls] == [c.name for c in new.tool_calls]
        if n:
            assert got[0].position == 7
    finally:
        await store.close()


@pytest.mark.parametrize("n", [1, inline.MOST, inline.MOST + 2])
async def test_event_chunk_batches_of_any_count_are_written(pg_dsn: str, n: int) -> None:
    store = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    try:
        writes = [ChunkWrite(f"s{i}", EventChunk(1, 2, bytes([i, 0, 255])), after=0) for i in range(n)]
        assert await store.write_event_chunks(writes) == [True] * n
        # The same conditions again: every log's end moved, so each write is refused.
        assert await store.write_event_chunks(writes) == [False] * n
        replace = [ChunkWrite("s0", EventChunk(1, 3, b"\x00new"), after=2, replace_from=1)]
        assert await store.write_event_chunks(replace) == [True]
        assert await store.last_event_chunk("s0") == EventChunk(1, 3, b"\x00new")
        for i in range(1, n):
            assert await store.last_event_chunk(f"s{i}") == EventChunk(1, 2, bytes([i, 0, 255]))
    finally:
        await store.close()
