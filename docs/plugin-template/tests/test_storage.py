"""Run the storage conformance suite of hermes_core.testing against the plugin's backend: one
test per check, each on a snapshot file of its own (docs/testing-plugins.md#storage-backends)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_notes.plugin import make_storage

from hermes_core import Storage
from hermes_core.testing import StorageCheck, storage_checks


class SnapshotTarget:
    """How the suite gets storages of this backend: one process, so always the same instance
    (the suite then opens and closes it more than once, as restarts)."""

    def __init__(self, path: Path) -> None:
        self.storage = make_storage(path)

    def make(self) -> Storage:
        return self.storage


@pytest.mark.parametrize("check", storage_checks(), ids=str)
async def test_the_snapshot_backend_conforms(check: StorageCheck, tmp_path: Path) -> None:
    await check.run(SnapshotTarget(tmp_path / "notes.snapshot"))


async def test_a_snapshot_survives_a_restart(tmp_path: Path) -> None:
    from hermes_core import SessionRecord

    path = tmp_path / "notes.snapshot"
    first = make_storage(path)
    await first.open()
    await first.create_session(SessionRecord(id="s1", source="embed", cwd="/w", profile="default"))
    await first.close()
    again = make_storage(path)
    await again.open()
    assert await again.get_session("s1") is not None
    await again.close()
