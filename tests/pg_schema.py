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


def own_connections(dsn: str) -> tuple[str, str]:
    """Return ``(dsn, name)``: ``dsn`` with a unique ``application_name``, so a test can make the
    server drop this client's connections (:func:`drop_connections`) and nobody else's."""
    from psycopg.conninfo import make_conninfo

    name = f"hermes-test-{secrets.token_hex(4)}"
    return make_conninfo(dsn, application_name=name), name


async def drop_connections(dsn: str, name: str) -> int:
    """Make the server terminate every connection named ``name`` (as a restart would); return how many."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        cur = await admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        )
        found = await cur.fetchone()
    return int(found[0]) if found else 0
