"""The PostgreSQL backend passes the storage conformance suite on the real server, each check in a
schema of its own, with two pools on it where a check needs two instances
(docs/testing-plugins.md#storage-backends)."""

from __future__ import annotations

import pytest

from hermes_core.testing import StorageCheck, storage_checks
from hermes_postgres.plugin import make_storage
from hermes_postgres.store import PostgresStorage


class PostgresTarget:
    """Storages (each with its own pool) on one schema."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def make(self) -> PostgresStorage:
        storage: PostgresStorage = make_storage(dsn=self.dsn, pool_size=4, pool_timeout_s=10.0)
        return storage


@pytest.mark.parametrize("check", storage_checks(), ids=str)
async def test_postgres_storage_conforms(check: StorageCheck, pg_dsn: str) -> None:
    await check.run(PostgresTarget(pg_dsn))
