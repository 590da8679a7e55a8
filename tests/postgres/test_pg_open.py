"""Opening PostgreSQL storage: migration from empty, refusals, clear errors without secrets, the
bounded pool."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from hermes_core import ConfigError, NewRow, SessionNotFound, SessionRecord, StorageError, StorageUnavailable
from hermes_postgres.plugin import make_storage
from hermes_postgres.schema import MIGRATIONS, SCHEMA_VERSION
from hermes_postgres.store import PostgresStorage
from tests.pg_schema import drop_connections, own_connections
from tests.timing import eventually, scaled


def record(session_id: str) -> SessionRecord:
    return SessionRecord(id=session_id, source="api", cwd="/work", profile="default")


async def tables(dsn: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "ORDER BY table_name"
        )
        return [row[0] for row in await cur.fetchall()]


async def test_an_empty_database_is_migrated_once_and_reopened_as_is(pg_dsn: str) -> None:
    assert await tables(pg_dsn) == []
    first: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await first.open()
    ids = await first.create_session(record("s1"), [])
    await first.close()
    assert first.schema_before_open == 0
    assert await tables(pg_dsn) == [
        "hermes_event_chunks",
        "hermes_leases",
        "hermes_messages",
        "hermes_records",
        "hermes_schema",
        "hermes_sessions",
    ]

    # Two instances starting together: one migrates, both open, nothing is lost.
    again = [make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5) for _ in range(2)]
    await asyncio.gather(*(store.open() for store in again))
    try:
        assert [store.schema_before_open for store in again] == [SCHEMA_VERSION, SCHEMA_VERSION]
        assert ids == [] and await again[0].get_session("s1") is not None
        report = await again[1].diagnostics()
        assert report["schema_version"] == SCHEMA_VERSION and report["pool"]["max"] == 2
    finally:
        for store in again:
            await store.close()


async def test_a_newer_schema_and_foreign_tables_are_refused(pg_dsn: str) -> None:
    store = make_storage(dsn=pg_dsn, pool_size=1, pool_timeout_s=5)
    await store.open()
    await store.close()
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute("UPDATE hermes_schema SET version = 99")
    with pytest.raises(StorageError, match="newer than this Hermes supports"):
        await make_storage(dsn=pg_dsn, pool_size=1, pool_timeout_s=5).open()

    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute("DROP TABLE hermes_schema")
    with pytest.raises(StorageError, match="without a schema version"):
        await make_storage(dsn=pg_dsn, pool_size=1, pool_timeout_s=5).open()


async def test_a_wrong_password_is_one_clear_error_without_the_password(pg_dsn: str) -> None:
    wrong = make_conninfo(pg_dsn, password="not-the-password-0451")
    started = time.monotonic()
    with pytest.raises(StorageUnavailable) as failure:
        await make_storage(dsn=wrong, pool_size=1, pool_timeout_s=5).open()
    message = str(failure.value)
    assert "password authentication failed" in message and "check the user and password" in message
    assert "not-the-password-0451" not in message
    assert time.monotonic() - started < scaled(10)


async def test_no_server_at_the_address_is_one_clear_error(pg_dsn: str) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dsn = make_conninfo(pg_dsn, port=str(port), password="sekrit-9")
    with pytest.raises(StorageUnavailable) as failure:
        await make_storage(dsn=dsn, pool_size=1, pool_timeout_s=2).open()
    message = str(failure.value)
    assert f"127.0.0.1:{port}/" in message and "is running and reachable" in message
    assert "sekrit-9" not in message


def test_no_dsn_is_a_config_error_naming_both_ways_to_give_one() -> None:
    with pytest.raises(ConfigError, match=r"HERMES_POSTGRES_DSN or storage\.dsn"):
        make_storage(dsn=None, pool_size=1, pool_timeout_s=1)


async def waiting_on_a_lock(dsn: str) -> int:
    """How many server backends wait for a lock (the store's stuck query)."""
    async with await psycopg.AsyncConnection.connect(dsn) as monitor:
        cur = await monitor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def test_an_exhausted_pool_fails_fast_instead_of_waiting(pg_dsn: str) -> None:
    store: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=1, pool_timeout_s=0.5)
    await store.open()
    blocker = await psycopg.AsyncConnection.connect(pg_dsn)
    try:
        await store.create_session(record("s1"))
        # A lock the store's only connection will wait on, holding it.
        await blocker.execute("LOCK TABLE hermes_sessions IN ACCESS EXCLUSIVE MODE")
        stuck = asyncio.create_task(store.get_session("s1"))
        await eventually(lambda: waiting_on_a_lock(pg_dsn), what="the first call waiting on the lock")

        started = time.monotonic()
        with pytest.raises(StorageUnavailable, match=r"no free PostgreSQL connection within 0\.5 s"):
            await store.list_sessions()
        assert time.monotonic() - started < scaled(5)

        await blocker.rollback()  # the lock goes; the stuck call completes
        got = await asyncio.wait_for(stuck, scaled(10))
        assert got is not None and got.id == "s1"
        assert (await store.list_sessions()).sessions[0].id == "s1"  # usable again
    finally:
        await blocker.close()
        await store.close()


def test_the_dsn_host_and_database_are_what_messages_show() -> None:
    from hermes_postgres.dsn import describe_server

    shown = describe_server("postgresql://alice:pw-123@db.internal:6543/prod")
    assert shown == "db.internal:6543/prod" and "pw-123" not in shown
    assert conninfo_to_dict(make_conninfo("host=x password=y"))["password"] == "y"


async def test_the_pool_recovers_after_the_server_dropped_its_connections(pg_dsn: str) -> None:
    """A server restart (here: every connection of this store terminated) costs reads nothing and
    writes at most the one that found out; the pool replaces the dead connections by itself."""
    dsn, name = own_connections(pg_dsn)  # the server drops this store's connections, no one else's
    store: PostgresStorage = make_storage(dsn=dsn, pool_size=3, pool_timeout_s=5)
    await store.open()
    try:
        await store.create_session(record("s1"))

        async def drop_all() -> None:
            # Three connections open and idle, then the server drops them all.
            await asyncio.gather(*(store.get_session("s1") for _ in range(3)))
            assert await drop_connections(pg_dsn, name) >= 1

        await drop_all()
        assert (await store.get_session("s1")) is not None  # a read is tried again on a fresh connection
        assert (await store.list_sessions()).sessions[0].id == "s1"
        assert len(await store.load_rows("s1")) == 0

        await drop_all()
        failed = 0
        for i in range(3):
            try:
                await store.append_rows("s1", [NewRow(role="user", content=f"m{i}")])
            except StorageUnavailable as exc:
                assert "is unavailable" in str(exc)
                failed += 1
        assert failed <= 1  # only the write that met a dead connection; the others got fresh ones
        assert len(await store.load_rows("s1")) == 3 - failed
    finally:
        await store.close()


async def foreign_keys(dsn: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'hermes_messages'::regclass AND contype = 'f'"
        )
        return [row[0] for row in await cur.fetchall()]


async def test_a_version_1_database_loses_its_foreign_key_and_keeps_its_rows(pg_dsn: str) -> None:
    # What the first release created: messages referenced sessions with a foreign key.
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute("CREATE TABLE hermes_schema (version integer NOT NULL)")
        await conn.execute("INSERT INTO hermes_schema VALUES (1)")
        for statement in MIGRATIONS[0]:
            await conn.execute(statement)
        await conn.execute("INSERT INTO hermes_sessions (id, created_at, updated_at) VALUES ('old', 1, 1)")
        await conn.execute(
            "INSERT INTO hermes_messages (session_id, position, role, content, created_at) "
            "VALUES ('old', 1, 'user', 'from version 1', 1), ('old', 2, 'assistant', 'reply', 1)"
        )
    assert await foreign_keys(pg_dsn) == ["hermes_messages_session_id_fkey"]

    store: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await store.open()
    try:
        assert store.schema_before_open == 1
        assert (await store.diagnostics())["schema_version"] == SCHEMA_VERSION
        assert await foreign_keys(pg_dsn) == []
        old = await store.load_rows("old")
        assert [r.content for r in old] == ["from version 1", "reply"]
        (added,) = await store.append_rows("old", [NewRow(role="user", content="from version 2")])
        assert added > old[-1].id
        # Without the key the append itself still refuses rows of a session that is not stored.
        with pytest.raises(SessionNotFound):
            await store.append_rows("missing", [NewRow(role="user", content="lost")])
        with pytest.raises(SessionNotFound):
            await store.append_rows(
                "missing", [NewRow(role="user", content="a"), NewRow(role="user", content="b")]
            )
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            cur = await conn.execute("SELECT count(*) FROM hermes_messages WHERE session_id = 'missing'")
            assert await cur.fetchone() == (0,)
    finally:
        await store.close()
    again: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=5)
    await again.open()
    try:
        assert again.schema_before_open == SCHEMA_VERSION
        assert [r.content for r in await again.load_rows("old")][-1] == "from version 2"
    finally:
        await again.close()
