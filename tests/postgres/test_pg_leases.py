"""Writer leases on PostgreSQL between instances: one winner, fencing after a takeover."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hermes_core import LeaseLost, NewRow, SessionRecord, StorageError
from hermes_postgres.plugin import make_storage
from hermes_postgres.store import PostgresStorage
from tests.timing import eventually


def record(session_id: str) -> SessionRecord:
    return SessionRecord(id=session_id, source="api", cwd="/work", profile="default")


def user(text: str) -> NewRow:
    return NewRow(role="user", content=text)


async def opened(dsn: str, pool_size: int = 4) -> PostgresStorage:
    store: PostgresStorage = make_storage(dsn=dsn, pool_size=pool_size, pool_timeout_s=10.0)
    await store.open()
    return store


async def test_two_instances_racing_for_one_lease_get_one_winner(pg_dsn: str) -> None:
    instances = [await opened(pg_dsn) for _ in range(2)]
    try:
        for round_ in range(20):
            session_id = f"race-{round_}"
            if round_ % 2:
                await instances[0].create_session(record(session_id))
            answers = await asyncio.gather(
                *(store.acquire_lease(session_id, f"inst{i}", 30) for i, store in enumerate(instances))
            )
            winners = [i for i, holder in enumerate(answers) if holder is None]
            assert len(winners) == 1, answers
            loser = 1 - winners[0]
            assert answers[loser] == f"inst{winners[0]}"
    finally:
        for store in instances:
            await store.close()


async def test_an_expired_owner_cannot_write_after_a_takeover(pg_dsn: str) -> None:
    a, b = await opened(pg_dsn), await opened(pg_dsn)
    try:
        await a.create_session(record("s1"), [user("first")])
        assert await a.acquire_lease("s1", "inst-a", 0.3) is None
        kept = await a.append_rows("s1", [user("while holding")])

        # a stalls past its TTL; b takes the session over.
        async def b_took_over() -> bool:
            return await b.acquire_lease("s1", "inst-b", 30) is None

        await eventually(b_took_over, timeout=10)
        written = await b.append_rows("s1", [user("from b")])

        with pytest.raises(LeaseLost) as refused:
            await a.append_rows("s1", [user("late from a")])
        assert refused.value.holder == "inst-b"
        with pytest.raises(LeaseLost):
            await a.rewrite("s1", archive_row_ids=kept, archived_reason="rewind")
        with pytest.raises(LeaseLost):
            await a.update_session("s1", {"title": "a's title"})
        with pytest.raises(LeaseLost):  # the reply's row and the usage total: neither is written
            await a.append_rows_and_update(
                "s1", [user("late reply")], {"title": "a's", "usage": {"output": 9}}
            )
        assert await a.renew_lease("s1", "inst-a", 30) is False

        rows = await b.load_rows("s1", include_archived=True)
        assert [r.content for r in rows] == ["first", "while holding", "from b"]
        assert all(r.active for r in rows) and written[0] == rows[-1].id
        got = await b.get_session("s1")
        assert got is not None and got.title is None and not got.usage
        # b's writes go on; a can write again only by taking the lease back properly.
        assert await a.acquire_lease("s1", "inst-a", 30) == "inst-b"
        await b.release_lease("s1", "inst-b")
        assert await a.acquire_lease("s1", "inst-a", 30) is None
        await a.append_rows("s1", [user("a again")])
        assert [r.content for r in await b.load_rows("s1")][-1] == "a again"
        await a.append_rows_and_update("s1", [user("a's reply")], {"usage": {"output": 2}})
        got = await b.get_session("s1")
        assert got is not None and dict(got.usage) == {"output": 2}
        assert [r.content for r in await b.load_rows("s1")][-1] == "a's reply"
    finally:
        await a.close()
        await b.close()


async def test_every_change_of_hands_raises_the_epoch(pg_dsn: str) -> None:
    import psycopg

    a, b = await opened(pg_dsn), await opened(pg_dsn)
    try:
        await a.create_session(record("s1"))

        async def epoch() -> int:
            async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
                cur = await conn.execute("SELECT epoch FROM hermes_leases WHERE session_id = 's1'")
                row = await cur.fetchone()
                assert row is not None
                return int(row[0])

        await a.acquire_lease("s1", "inst-a", 30)
        first = await epoch()
        await a.acquire_lease("s1", "inst-a", 30)  # the holder again: same hands
        assert await epoch() == first
        await b.acquire_lease("s1", "inst-b", 30, take_over="inst-a")
        assert await epoch() == first + 1
        await b.release_lease("s1", "inst-b")
        await a.acquire_lease("s1", "inst-a", 30)
        assert await epoch() == first + 2  # released rows keep counting: epochs never repeat
    finally:
        await a.close()
        await b.close()


async def test_a_former_owner_cannot_change_a_rows_meta_after_a_takeover(pg_dsn: str) -> None:
    a, b = await opened(pg_dsn), await opened(pg_dsn)
    try:
        (first,) = await a.create_session(record("s1"), [NewRow(role="tool", content="x", meta={"n": 1})])
        assert await a.acquire_lease("s1", "inst-a", 30) is None
        await a.update_row_meta(first, {"status": "running"})  # the holder writes
        assert await b.acquire_lease("s1", "inst-b", 30, take_over="inst-a") is None

        with pytest.raises(LeaseLost) as refused:
            await a.update_row_meta(first, {"status": "late", "n": 2})
        assert refused.value.holder == "inst-b"
        assert (await b.load_rows("s1"))[0].meta == {"n": 1, "status": "running"}

        await b.update_row_meta(first, {"status": "done"})  # the new holder goes on
        assert (await a.load_rows("s1"))[0].meta == {"n": 1, "status": "done"}
        with pytest.raises(LeaseLost):  # and the fence on a stays until it takes the lease again
            await a.update_row_meta(first, {"status": "later"})
    finally:
        await a.close()
        await b.close()


async def test_a_new_session_is_not_created_by_an_owner_whose_lease_was_taken_over(pg_dsn: str) -> None:
    # A session is written at its first row, after its lease was taken when it was opened: that
    # first write is fenced like every later one.
    a, b = await opened(pg_dsn), await opened(pg_dsn)
    try:
        assert await a.acquire_lease("new", "inst-a", 0.3) is None

        async def b_took_over() -> bool:
            return await b.acquire_lease("new", "inst-b", 30) is None

        await eventually(b_took_over, timeout=10)
        with pytest.raises(LeaseLost) as refused:
            await a.create_session(record("new"), [user("late from a")])
        assert refused.value.holder == "inst-b"
        assert await b.get_session("new") is None
        ids = await b.create_session(record("new"), [user("from b")])
        assert [(r.id, r.content) for r in await a.load_rows("new")] == [(ids[0], "from b")]
        # Taken by someone else with no lease involved, the id is refused as before.
        with pytest.raises(StorageError, match="already exists"):
            await b.create_session(record("new"), [user("again")])
        assert len(await b.load_rows("new")) == 1
    finally:
        await a.close()
        await b.close()


async def test_taking_a_lease_leaves_the_connection_flushing_every_commit(pg_dsn: str) -> None:
    # The lease commits without waiting for its flush; the rows written under it must not.
    import psycopg

    store = await opened(pg_dsn, pool_size=1)
    settings: list[str] = []
    real = psycopg.AsyncCursor.execute

    async def noting(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        result = await real(self, query, *args, **kwargs)
        async with self.connection.cursor() as probe:
            await real(probe, "SHOW synchronous_commit")
            found = await probe.fetchone()
        settings.append(str(found[0] if found else None))
        return result

    try:
        assert await store.acquire_lease("s1", "inst-a", 30) is None
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(psycopg.AsyncCursor, "execute", noting)
            await store.create_session(record("s1"), [user("one")])
            await store.append_rows("s1", [user("two")])
        assert settings == ["on", "on"]
    finally:
        await store.close()
