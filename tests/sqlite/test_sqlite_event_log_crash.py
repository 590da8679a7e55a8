"""kill -9 in the middle of a turn on a SQLite file, then a new process opens the session
(see tests/event_log_crash.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hermes_core import Kernel
from tests.event_log_crash import check_restart, run_child_until_killed


async def test_a_turn_cut_off_by_kill_9_ends_interrupted_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "hermes.sqlite3"
    printed, durable = await asyncio.to_thread(
        run_child_until_killed, "sqlite", str(db), "crash-sqlite", tmp_path
    )
    kernel = Kernel.create(
        entry_points=["mock", "sqlite"],
        strict=True,
        settings={
            "model": "mock:echo",
            "storage": {"backend": "sqlite", "path": str(db)},
            "titles": {"refine": False},
        },
    )
    async with kernel.running():
        await check_restart(kernel, "crash-sqlite", printed, durable)
