"""Console sessions in the API server's records (kept by the kernel's storage), the same behaviour
on SQLite and on PostgreSQL: only the cookie's hash is stored, expiry is enforced on read and by
the sweep, the table stays bounded, and a session closed through one handle (one instance) is gone
for every other one at once."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_api_server.console.auth import ConsoleSessions
from hermes_api_server.records import ApiRecords
from hermes_core import legacy_principal
from tests.api.records_world import api_records

P1, P2 = "principal:one", "principal:two"


@pytest.fixture(params=["sqlite", "postgres"])
async def pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[ApiRecords, ApiRecords]]:
    """Two handles on one backend, as two instances would have."""
    if request.param == "sqlite":
        async with api_records("sqlite", tmp_path / "hermes.sqlite3", count=2) as (a, b):
            yield a, b
        return
    from tests.pg_schema import fresh_schema
    from tests.services import postgres_dsn

    postgres_dsn()
    async with fresh_schema() as dsn, api_records("postgres", dsn, count=2) as (a, b):
        yield a, b


async def test_open_get_close_across_handles(pair: tuple[ApiRecords, ApiRecords]) -> None:
    a, b = pair
    one = ConsoleSessions(a, frozenset({P1, P2}), 3600)
    two = ConsoleSessions(b, frozenset({P1, P2}), 3600)
    token, session = await one.open(legacy_principal(P1))
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
    token, _ = await short.open(legacy_principal(P1))
    rotated = ConsoleSessions(b, frozenset({P2}), 3600)  # the key of P1 is no longer configured
    assert await rotated.get(token) is None
    assert await short.get(token) is None  # and the refusal dropped it
    token, _ = await short.open(legacy_principal(P1))
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
    tokens = [(await table.open(legacy_principal(P1 if i % 2 else P2)))[0] for i in range(5)]
    other = ConsoleSessions(b, frozenset({P1, P2}), 3600)
    alive = [await other.get(t) is not None for t in tokens]
    assert alive == [False, False, True, True, True]


async def test_only_the_hash_of_the_cookie_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "hermes.sqlite3"
    async with api_records("sqlite", path) as (store,):
        token, session = await ConsoleSessions(store, frozenset({P1}), 3600).open(legacy_principal(P1))
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("hermes.sqlite3"))
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT key, scope, data FROM records WHERE namespace = 'api.console'").fetchall()
    assert len(rows) == 1 and rows[0][1] == P1 and session.csrf in rows[0][2]
    assert token.encode() not in raw and all(token not in str(v) for v in rows[0])
