"""Hold a kernel's event-log writes back, so a test can look at what is shown before it is stored
(docs/reference/core.md#the-event-log)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hermes_core import Kernel


def hold_log_writes(storage: Any, *, open_now: bool) -> tuple[asyncio.Event, list[int]]:
    """Route ``storage``'s event-log writes through a gate.

    Returns the gate (set: writes go through; clear: each write waits) and a list that gets one
    entry, the number of chunks, for every write that reached the gate.
    """
    real_write = storage.write_event_chunks
    disk = asyncio.Event()
    if open_now:
        disk.set()
    waiting: list[int] = []

    async def gated(writes: Any) -> Any:
        waiting.append(len(writes))
        await disk.wait()
        return await real_write(writes)

    storage.write_event_chunks = gated
    return disk, waiting


def sqlite_kernel(tmp_path: Path) -> Kernel:
    """A kernel on the mock model and a SQLite file under ``tmp_path`` (no title refinement)."""
    return Kernel.create(
        entry_points=["mock", "sqlite"],
        strict=True,
        settings={
            "model": "mock:echo",
            "storage": {"backend": "sqlite", "path": str(tmp_path / "hermes.sqlite3")},
            "titles": {"refine": False},
        },
    )
