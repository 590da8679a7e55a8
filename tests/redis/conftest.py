"""Fixtures for the Redis run-bus tests: a flushed database on the test server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.services import redis_url


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
