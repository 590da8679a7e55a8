"""Console sessions in the API server's records, the same behaviour on both stores (the instance's
SQLite file and the shared PostgreSQL tables): only the cookie's hash is stored, expiry is enforced
on read and by the sweep, the table stays bounded, and a session closed through one store handle is
gone for every other one at once."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_api_server.console.auth import ConsoleSessions
from hermes_api_server.records import ApiRecords
from hermes_api_server.responses_store import ResponseStore

P1, P2 = "principal:one", "principal:two"


@pytest.fixture(params=["sqlite", "postgres"])
async def pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[ApiRecords, ApiRecords]]:
    """Two handles on one store, as two instances would have (one process for SQLite)."""
    if request.param == "sqlite":
        store = ResponseStore(tmp_path / "api_server.sqlite3", 100)
        await store.open()
        yield store, store
        await store.close()
        return
    from hermes_api_server.responses_store_pg import PgResponseStore
    from tests.pg_schema import fresh_schema
    from tests.services import postgres_dsn

    postgres_dsn()
    async with fresh_schema() as dsn:
        a, b = PgResponseStore(dsn, 100), PgResponseStore(dsn, 100)
        await a.open()
        await b.open()
        try:
            yield a, b
        finally:
            await a.close()
            await b.close()


async def test_open_get_close_across_handles(pair: tuple[ApiRecords, ApiRecords]) -> None:
    a, b = pair
    one = ConsoleSessions(a, frozenset({P1, P2}), 3600)
    two = ConsoleSessions(b, frozenset({P1, P2}), 3600)
    token, session = await one.open(P1)
    seen = await two.get(token)
    assert seen is not None and (seen.principal, seen.csrf) == (P1, session.csrf)
    assert abs(seen.expires_at - (time.time() + 3600)) < 60
    assert await two.get(token + "x") is None and await two.get(None) is None and await two.get("") is None
    assert await two.close(token) is True
    assert await one.get(token) is None  # ended for every handle at once
    assert await one.close(token) is False


async def test_expired_and_unconfigured_principals_are_refused(pair: tuple[ApiRecords, ApiRecords]) -> None:
    a, b = pair
    short = ConsoleSessions(a, frozenset({P1}), 0.2)
    token, _ = await short.open(P1)
    rotated = ConsoleSessions(b, frozenset({P2}), 3600)  # the key of P1 is no longer configured
    assert await rotated.get(token) is None
    assert await short.get(token) is None  # and the refusal dropped it
    token, _ = await short.open(P1)
    deadline = time.monotonic() + 10
    while await short.get(token) is not None:
        assert time.monotonic() < deadline, "the session never expired"
    await b.sweep(3600, 3600)  # pruning leaves nothing of it behind
    assert await b.close_console_session(token) is False


async def test_the_table_is_bounded_and_keeps_the_newest(
    pair: tuple[ApiRecords, ApiRecords], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hermes_api_server.console.auth as auth

    monkeypatch.setattr(auth, "MAX_SESSIONS", 3)
    a, b = pair
    table = ConsoleSessions(a, frozenset({P1, P2}), 3600)
    tokens = [(await table.open(P1 if i % 2 else P2))[0] for i in range(5)]
    other = ConsoleSessions(b, frozenset({P1, P2}), 3600)
    alive = [await other.get(t) is not None for t in tokens]
    assert alive == [False, False, True, True, True]


async def test_only_the_hash_of_the_cookie_is_stored(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "api_server.sqlite3", 100)
    await store.open()
    try:
        token, session = await ConsoleSessions(store, frozenset({P1}), 3600).open(P1)
    finally:
        await store.close()
    raw = (tmp_path / "api_server.sqlite3").read_bytes()
    rows = (
        sqlite3.connect(tmp_path / "api_server.sqlite3").execute("SELECT * FROM console_sessions").fetchall()
    )
    assert len(rows) == 1 and rows[0][1:3] == (P1, session.csrf)
    assert token.encode() not in raw and all(token not in str(v) for v in rows[0])
