"""A storage backend of a third party: everything in memory while the process runs, one snapshot
file between runs (``storage.backend = "notes-snapshot"``, the file at ``storage.path``).

It is built on the kernel's own ``MemoryStorage`` and adds only loading and saving; the storage
conformance suite (``tests/test_storage.py``) checks it does everything the kernel relies on:
sessions, rows, leases, records and the event log. One process at a time: two processes on one
file would each keep their own copy.
"""

from __future__ import annotations

import asyncio
import os
import pickle
from pathlib import Path

from hermes_core import MemoryStorage


class SnapshotStorage(MemoryStorage):
    """Memory storage saved to ``path`` at close and loaded from it at open.

    :param path: the snapshot file (a pickle: keep it where only you can write).
    """

    durable = True

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)

    async def open(self) -> None:
        """Load the last snapshot, if there is one."""
        if self.path.exists():
            data = await asyncio.to_thread(self.path.read_bytes)
            self.restore(pickle.loads(data))

    async def close(self) -> None:
        """Save a snapshot (written aside, then moved into place)."""
        data = pickle.dumps(self.snapshot())

        def save() -> None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            aside = self.path.with_suffix(".tmp")
            aside.write_bytes(data)
            os.replace(aside, self.path)

        await asyncio.to_thread(save)
