"""Writes on the way of every API turn are one statement each on PostgreSQL (issue #30): a batch
of event-log writes is one call of the server-side function, a record's put and release one
statement in autocommit; no transaction (``BEGIN``, a locking read, ``COMMIT``) around them.
Their outcomes are the conformance suite's (tests/postgres/test_pg_conformance.py); here, how
many statements they cost, counted at psycopg's public API, on the test server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from hermes_core import ChunkWrite, EventChunk, Expect
from hermes_postgres.plugin import make_storage
from hermes_postgres.store import PostgresStorage
from tests.api.records_world import api_records


class Statements:
    """Counts every statement a cursor executes and every transaction opened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        execute, transaction = psycopg.AsyncCursor.execute, psycopg.AsyncConnection.transaction

        async def counted_execute(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            self.sent.append(str(query).split()[0].upper())
            return await execute(cur, query, *args, **kwargs)

        def counted_transaction(conn: Any, *args: Any, **kwargs: Any) -> Any:
            self.sent.append("BEGIN")
            return transaction(conn, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted_execute)
        monkeypatch.setattr(psycopg.AsyncConnection, "transaction", counted_transaction)

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return sent


@pytest.fixture
async def store(pg_dsn: str) -> AsyncIterator[PostgresStorage]:
    made: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=10.0)
    await made.open()
    try:
        yield made
    finally:
        await made.close()


def chunk(first: int, last: int, text: str) -> EventChunk:
    return EventChunk(first, last, text.encode())


async def test_a_batch_of_event_log_writes_is_one_statement(
    store: PostgresStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.write_event_chunks([ChunkWrite("a", chunk(1, 2, "a1"), 0)])
    statements = Statements(monkeypatch)
    written = await store.write_event_chunks(
        [
            ChunkWrite("a", chunk(3, 4, "a2"), 2),
            ChunkWrite("b", chunk(1, 1, "b1"), 0),
            ChunkWrite("a", chunk(10, 10, "stale"), 9),  # the end is not 9: refused, the rest kept
            ChunkWrite("a", chunk(3, 5, "a2'"), 4, replace_from=3),
        ]
    )
    assert statements.take() == ["SELECT"]
    assert written == [True, True, False, True]
    assert await store.read_event_chunks("a", after=0, limit=10) == [chunk(1, 2, "a1"), chunk(3, 5, "a2'")]
    assert await store.read_event_chunks("b", after=0, limit=10) == [chunk(1, 1, "b1")]


async def test_a_put_and_a_release_are_one_statement_each(
    store: PostgresStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = Statements(monkeypatch)
    made = await store.put_record("t.trips", "k", '"v1"', scope="s", ttl_s=30)
    assert statements.take() == ["INSERT"]
    assert made is not None and (made.version, made.owner, made.epoch) == (1, None, 0)
    again = await store.put_record("t.trips", "k", '"v2"', scope="s")
    assert statements.take() == ["INSERT"]
    assert again is not None and again.version == 2 and again.created_at == made.created_at
    assert again.expires_at is None
    assert await store.put_record("t.trips", "k", '"no"', expect=Expect(version=1)) is None
    kept = await store.put_record("t.trips", "k", '"v3"', scope="s", expect=Expect(version=2, held=False))
    assert statements.take() == ["UPDATE", "UPDATE"]
    assert kept is not None and (kept.version, kept.data) == (3, '"v3"')

    claim = await store.claim_record("t.trips", "job", '"w"', owner="a")
    statements.take()
    assert await store.release_record("t.trips", "job", expect=Expect(owner="b")) is None
    done = await store.release_record("t.trips", "job", expect=Expect(owner="a", epoch=1), data='"done"')
    assert statements.take() == ["UPDATE", "UPDATE"]
    assert done is not None and (done.owner, done.epoch, done.data) == (None, 1, '"done"')
    assert done.version == claim.record.version + 1
    stored = await store.get_record("t.trips", "job")
    assert stored == done


async def test_a_version_3_database_gains_the_write_function_and_its_logs_go_on(pg_dsn: str) -> None:
    from hermes_postgres.schema import MIGRATIONS, SCHEMA_VERSION

    # What schema 3 held: the tables, and a log written chunk by chunk, without the function.
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute("CREATE TABLE hermes_schema (version integer NOT NULL)")
        await conn.execute("INSERT INTO hermes_schema VALUES (3)")
        for version in (0, 1, 2):
            for statement in MIGRATIONS[version]:
                await conn.execute(statement)
        await conn.execute(
            "INSERT INTO hermes_event_chunks (session_id, first_seq, last_seq, data) "
            "VALUES ('old', 1, 3, 'x')"
        )
    upgraded: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=10.0)
    await upgraded.open()
    try:
        assert upgraded.schema_before_open == 3 and SCHEMA_VERSION == 4
        assert await upgraded.write_event_chunks([ChunkWrite("old", chunk(1, 1, "no"), 0)]) == [False]
        assert await upgraded.write_event_chunks([ChunkWrite("old", chunk(4, 4, "y"), 3)]) == [True]
        stored = await upgraded.read_event_chunks("old", after=0, limit=10)
        assert stored == [chunk(1, 3, "x"), chunk(4, 4, "y")]
    finally:
        await upgraded.close()


async def test_an_insert_is_one_statement(store: PostgresStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    statements = Statements(monkeypatch)
    made = await store.insert_record("t.trips", "new", '"v"', scope="s", ttl_s=30)
    assert statements.take() == ["INSERT"]
    assert made.won and (made.record.owner, made.record.epoch, made.record.version) == (None, 1, 2)
    assert await store.get_record("t.trips", "new") == made.record
    statements.take()
    again = await store.insert_record("t.trips", "new", '"w"', ttl_s=30)
    assert statements.take() == ["INSERT", "SELECT"]  # the record in the way, read after
    assert not again.won and again.record == made.record


async def test_a_new_chats_first_turn_end_is_two_statements(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chat index adds a new chat's key with one statement (it took a claim and its
    release, three before) and writes the session's heads with one more."""
    async with api_records("postgres", pg_dsn) as (records,):
        statements = Statements(monkeypatch)
        named = await records.record_chat("p-trips", "s1", ["k-trips"], [], 8, first=True)
        assert named == {"k-trips": [("s1", True)]}
        assert statements.take() == ["INSERT", "INSERT"]
