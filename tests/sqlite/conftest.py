"""Fixtures for the storage backend tests: a real SQLite file in a temp folder, and the same
contract tests again against a real PostgreSQL server.

A test that asks only for ``storage`` runs against both backends; one that also asks for
``db_path`` reaches into the SQLite file and runs against SQLite alone, as do the tests of the
SQLite thread in ``SQLITE_INTERNALS``. Without a PostgreSQL server the postgres runs are
skipped with one line saying how to enable them (a failure under ``CI=true``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_sqlite.plugin import make_storage

BACKENDS = ("sqlite", "postgres")
# Tests of the SQLite database thread itself (answers settle in submission order); a pool of
# connections answers concurrent calls as each finishes.
SQLITE_INTERNALS = frozenset({"test_answers_beyond_one_settling_slice_all_land_in_order"})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "storage" in metafunc.fixturenames and "storage_backend" in metafunc.fixturenames:
        sqlite_only = "db_path" in metafunc.fixturenames or metafunc.function.__name__ in SQLITE_INTERNALS
        metafunc.parametrize("storage_backend", ["sqlite"] if sqlite_only else list(BACKENDS), indirect=True)


@pytest.fixture
def storage_backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "hermes.sqlite3"


@pytest.fixture
async def storage(storage_backend: str, tmp_path: Path) -> AsyncIterator[Any]:
    if storage_backend == "postgres":
        from hermes_postgres.plugin import make_storage as make_postgres
        from tests.pg_schema import fresh_schema

        async with fresh_schema() as dsn:
            store = make_postgres(dsn=dsn, pool_size=10, pool_timeout_s=10.0)
            await store.open()
            try:
                yield store
            finally:
                await store.close()
        return
    store = make_storage(path=tmp_path / "data" / "hermes.sqlite3")
    await store.open()
    try:
        yield store
    finally:
        await store.close()
