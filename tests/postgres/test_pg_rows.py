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


async def test_each_write_of_a_turn_is_one_round_trip(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A turn on a new session: lease, read, the session with its user row (on the path to the
    # first token), the assistant row, the usage, the release. Each is one round trip to the
    # server: no BEGIN/COMMIT pairs, no separate fence check.
    store = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    trips: list[str] = []
    real = psycopg.AsyncConnection.wait

    async def counting(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(gen, "__qualname__", str(gen))
        if not (name.endswith("._commit_gen") and self.autocommit):
            trips.append(name)  # the pool's commit of an autocommit connection sends nothing
        return await real(self, gen, *args, **kwargs)

    async def trips_of(call: Any) -> tuple[int, Any]:
        trips.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(psycopg.AsyncConnection, "wait", counting)
            result = await call
        return len(trips), result

    record = SessionRecord(id="s1", source="api", cwd="/", profile="p")
    try:
        assert await trips_of(store.acquire_lease("s1", "inst-a", 30)) == (1, None)
        assert await trips_of(store.get_session("s1")) == (1, None)
        n, ids = await trips_of(store.create_session(record, [NewRow(role="user", content="one")]))
        assert n == 1
        n, more = await trips_of(store.append_rows("s1", [NewRow(role="assistant", content="two")]))
        assert n == 1 and more[0] > ids[0]
        assert await trips_of(store.update_session("s1", {"usage": {"input": 3}})) == (1, None)
        assert await trips_of(store.release_lease("s1", "inst-a")) == (1, None)

        assert [r.content for r in await store.load_rows("s1")] == ["one", "two"]
        got = await store.get_session("s1")
        assert got is not None and got.message_count == 2 and got.usage == {"input": 3}
        # Released, and the session kept its lease row: the next holder's epoch is higher.
        assert await store.acquire_lease("s1", "inst-b", 30) is None
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
