"""Fixtures for the SQLite backend tests: a real database file in a temp folder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_sqlite.plugin import make_storage
from hermes_sqlite.store import SqliteStorage


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "hermes.sqlite3"


@pytest.fixture
async def storage(db_path: Path) -> AsyncIterator[SqliteStorage]:
    store = make_storage(path=db_path)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
