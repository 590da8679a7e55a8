"""Fixtures for the Redis run-bus tests: a Redis database of the test's own and the storage the
instances share (a fresh PostgreSQL schema when the test server is there, else one SQLite file).

The test Redis is shared by every test session on the machine (several worktrees run their suites
at once). A test never empties a database another session may be using: it claims one of the
numbered databases above 0 with a key only one session can set (:func:`own_database`), empties
that, and lets it go at the end. Database 0 is left to whoever still flushes it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.services import redis_server_binary, redis_url


@dataclass
class Shared:
    """What every instance of one test gets: its config and environment."""

    url: str
    config: str
    env: dict[str, str] = field(default_factory=dict)


#: Set in a database while a test session uses it (expires on its own if that session dies).
CLAIM_KEY = "hermes-test:claimed-by"
CLAIM_S = 1800


def _empty(client: Any) -> None:
    """Delete the run bus's keys (``hermes:*``), not the claim."""
    for key in client.scan_iter(match="hermes:*", count=500):
        client.unlink(key)


@contextlib.contextmanager
def own_database(url: str) -> Iterator[str]:
    """Yield the URL of a database of the server at ``url`` that this test alone uses, emptied.

    Another session's test could be using any database at the same moment; emptying one under
    it ends its runs for no reason of its own. So a database is claimed first (``SET NX`` of
    :data:`CLAIM_KEY` in it), and only a claimed one is emptied.
    """
    from urllib.parse import urlsplit, urlunsplit

    import redis

    probe = redis.Redis.from_url(url)
    try:
        count = int(probe.config_get("databases").get("databases", 16))
    finally:
        probe.close()
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    for number in range(1, count):
        numbered = urlunsplit(urlsplit(url)._replace(path=f"/{number}"))
        client = redis.Redis.from_url(numbered)
        try:
            if not client.set(CLAIM_KEY, token, nx=True, ex=CLAIM_S):
                continue
            try:
                _empty(client)
                yield numbered
            finally:
                _empty(client)
                if client.get(CLAIM_KEY) == token.encode():
                    client.delete(CLAIM_KEY)
            return
        finally:
            client.close()
    pytest.fail(f"every database of the test Redis ({count}) is claimed by another test session")


@pytest.fixture
def redis_dsn() -> Iterator[str]:
    """The URL of an empty database of the test server that no other session uses (the bus
    keys start with ``hermes:``)."""
    with own_database(redis_url()) as url:
        yield url


STORAGE_SQLITE = """
[storage]
path = "{path}"
"""
STORAGE_POSTGRES = """
[storage]
backend = "postgres"
"""


@pytest.fixture
async def shared(tmp_path: Path, redis_dsn: str) -> AsyncIterator[Shared]:
    """The bus and the storage the instances of a test share."""
    base = {"HERMES_REDIS_URL": redis_dsn}
    if os.environ.get("HERMES_TEST_POSTGRES_DSN", "").strip():
        from tests.pg_schema import fresh_schema

        async with fresh_schema() as dsn:
            yield Shared(redis_dsn, STORAGE_POSTGRES, {**base, "HERMES_POSTGRES_DSN": dsn})
    else:
        yield Shared(redis_dsn, STORAGE_SQLITE.format(path=tmp_path / "shared.sqlite3"), base)


@pytest.fixture
def sqlite_shared(tmp_path: Path, redis_dsn: str) -> Shared:
    """One SQLite file and the bus, whatever storage the other tests share (several instances on
    one host, docs/deploy.md)."""
    path = tmp_path / "shared.sqlite3"
    return Shared(redis_dsn, STORAGE_SQLITE.format(path=path), {"HERMES_REDIS_URL": redis_dsn})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """A Redis of this test's own (it is stopped and started again)."""
    binary = redis_server_binary()  # skipped (failed under CI) like every Redis test without it
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        procs.append(
            subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
            )
        )

    def stop() -> None:
        procs[-1].terminate()
        procs[-1].wait(10)

    start()
    try:
        yield f"redis://127.0.0.1:{port}/0", (start, stop)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.fixture
async def world(tmp_path: Path, private_redis: tuple[str, Any]) -> AsyncIterator[Any]:
    """Instances to break on purpose: one PostgreSQL schema, this test's own Redis (see
    ``tests/redis/fault_world.py``); every instance is resumed and stopped at the end."""
    import signal

    from tests.pg_schema import fresh_schema
    from tests.redis.fault_world import World, redis_answers
    from tests.services import postgres_dsn

    postgres_dsn()  # the durable records must be shared: PostgreSQL
    url, (start, stop) = private_redis
    await redis_answers(url)
    async with fresh_schema() as dsn:
        made = World(tmp_path, url, dsn, start, stop)
        try:
            yield made
        finally:
            for server in made.servers:
                if server.proc.poll() is None:
                    server.proc.send_signal(signal.SIGCONT)  # a stopped process would not stop
                server.stop()
