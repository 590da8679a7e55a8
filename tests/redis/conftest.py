"""Fixtures for the Redis run-bus tests: a flushed Redis database and the storage the
instances share (a fresh PostgreSQL schema when the test server is there, else one SQLite file)."""

from __future__ import annotations

import os
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


@pytest.fixture
async def redis_dsn() -> AsyncIterator[str]:
    """The test server's URL, its database emptied first (the bus keys start with ``hermes:``)."""
    import redis.asyncio as aioredis

    url = redis_url()
    client = aioredis.from_url(url)
    try:
        await client.flushdb()
    finally:
        await client.aclose()
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
