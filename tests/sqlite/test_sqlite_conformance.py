"""The SQLite backend passes the storage conformance suite on a real database file, each check on
a file of its own, two storages on one file where a check needs two instances
(docs/testing-plugins.md#storage-backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.testing import StorageCheck, storage_checks
from hermes_sqlite.plugin import make_storage
from hermes_sqlite.store import SqliteStorage


class SqliteTarget:
    """Storages on one database file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def make(self) -> SqliteStorage:
        storage: SqliteStorage = make_storage(self.path)
        return storage


@pytest.mark.parametrize("check", storage_checks(), ids=str)
async def test_sqlite_storage_conforms(check: StorageCheck, tmp_path: Path) -> None:
    await check.run(SqliteTarget(tmp_path / "hermes.sqlite3"))
