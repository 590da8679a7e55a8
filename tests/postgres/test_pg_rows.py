"""Row storage details of the PostgreSQL backend the shared contract tests cannot reach."""

from __future__ import annotations

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
