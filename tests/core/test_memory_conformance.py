"""The built-in memory backend passes the storage conformance suite
(docs/testing-plugins.md#storage-backends)."""

from __future__ import annotations

import pytest

from hermes_core.memory_storage import MemoryStorage
from hermes_core.testing import StorageCheck, storage_checks


class MemoryTarget:
    """One memory storage per check: it cannot share, so ``make`` always returns it."""

    def __init__(self) -> None:
        self.storage = MemoryStorage()

    def make(self) -> MemoryStorage:
        return self.storage


@pytest.mark.parametrize("check", storage_checks(), ids=str)
async def test_memory_storage_conforms(check: StorageCheck) -> None:
    await check.run(MemoryTarget())
