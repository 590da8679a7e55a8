"""Fixtures for the PostgreSQL-only tests: an empty private schema on the test server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.pg_schema import fresh_schema


@pytest.fixture
async def pg_dsn() -> AsyncIterator[str]:
    """A DSN whose search path is a new, empty schema (dropped afterwards)."""
    async with fresh_schema() as dsn:
        yield dsn
