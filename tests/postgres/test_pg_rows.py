"""Row storage details of the PostgreSQL backend the shared contract tests cannot reach."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from hermes_core import NewRow, SessionRecord, StorageError, StoredToolCall
from hermes_postgres.plugin import make_storage


async def test_a_corrupt_column_is_a_storage_error_and_other_sessions_go_on(pg_dsn: str) -> None:
    store = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    try:
        call = StoredToolCall("", "call_1", "read_file", "{}")
        (bad,) = await store.create_session(
            SessionRecord(id="s1", source="api", cwd="/", profile="p"),
            [NewRow(role="assistant", content="x", tool_calls=(call,))],
        )
        assert (await store.load_rows("s1"))[0].tool_calls[0].call_id == f"tc_{bad}_0"
        await store.create_session(SessionRecord(id="s2", source="api", cwd="/", profile="p"))
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
            await conn.execute("UPDATE hermes_messages SET tool_calls = '[[\"a\", ' WHERE id = %s", (bad,))

        with pytest.raises(StorageError, match="invalid JSON"):
            await store.load_rows("s1")
        await store.append_rows("s2", [NewRow(role="user", content="fine")])
        assert [r.content for r in await store.load_rows("s2")] == ["fine"]
    finally:
        await store.close()


async def test_a_session_and_its_first_rows_are_written_by_one_statement(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new session's first write is on the path to a turn's first token: one round trip.
    store = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    statements: list[str] = []
    real = psycopg.AsyncCursor.execute

    async def counting(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return await real(self, query, *args, **kwargs)

    try:
        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counting)
        rows = [NewRow(role="user", content="one"), NewRow(role="assistant", content="two")]
        ids = await store.create_session(SessionRecord(id="s1", source="api", cwd="/", profile="p"), rows)
        assert len(statements) == 1 and ids[0] < ids[1]
        monkeypatch.undo()
        loaded = await store.load_rows("s1")
        assert [(r.id, r.content) for r in loaded] == list(zip(ids, ["one", "two"], strict=True))
        got = await store.get_session("s1")
        assert got is not None and got.message_count == 2
    finally:
        await store.close()


async def test_a_row_the_server_refuses_leaves_no_session_behind(pg_dsn: str) -> None:
    store = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    try:
        rows = [NewRow(role="user", content="fine"), NewRow(role="user", content="big", position=2**70)]
        with pytest.raises(StorageError):
            await store.create_session(SessionRecord(id="s1", source="api", cwd="/", profile="p"), rows)
        assert await store.get_session("s1") is None
        # The id is still free: the same session is created whole on the next try.
        ids = await store.create_session(SessionRecord(id="s1", source="api", cwd="/", profile="p"), rows[:1])
        assert [r.id for r in await store.load_rows("s1")] == ids
    finally:
        await store.close()
