"""Fixtures for the Redis run-bus tests: a flushed Redis database and the storage the
instances share (a fresh PostgreSQL schema when the test server is there, else one SQLite file)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.services import redis_url


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
