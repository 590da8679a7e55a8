"""A private, empty PostgreSQL schema per test: the store migrates it from nothing, and it is
dropped afterwards, so tests never see each other's rows."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.services import postgres_dsn


def with_search_path(dsn: str, schema: str) -> str:
    """Return ``dsn`` with the connection option that makes ``schema`` the only search path."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, options=f"-c search_path={schema}")


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """Create an empty schema; yield a DSN that uses it; drop it again."""
    import psycopg

    dsn = postgres_dsn()
    schema = f"t_{secrets.token_hex(6)}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(dsn, schema)
    finally:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")
