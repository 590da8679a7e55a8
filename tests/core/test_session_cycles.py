"""Closed sessions and finished turns are freed by reference counting, not by the cyclic
garbage collector (docs/reference/core.md#sessions-are-freed-at-release).

A session's parts and a turn's budget reach their owner through weak references
(:mod:`hermes_core.backref`), so nothing of a released session waits for a collection: under a
burst of requests a full collection would otherwise stall the event loop every second or so.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from hermes_core import Kernel, TurnCompleted
from hermes_core.event_log.writer import SessionLog
from hermes_core.event_log.writer_task import LogWriter
from hermes_core.testing import make_kernel


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """Collect now, then keep what later collections find in ``gc.garbage`` for the test."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.garbage.clear()
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


async def _one_request(kernel: Kernel, cwd: Path, text: str) -> None:
    """What a stateless request does: open a session, run one turn, close it."""
    session = await kernel.open_session(source="embed", owner="me", cwd=cwd)
    turn = await session.submit(text, owner="me")
    events = [e async for e in turn.events()]
    assert isinstance(events[-1], TurnCompleted)
    await session.close()


def _kernel_garbage(found: list[object]) -> Counter[str]:
    return Counter(
        type(o).__qualname__ for o in found if type(o).__module__.startswith(("hermes_core", "plugins"))
    )


async def test_requests_leave_no_cyclic_garbage(tmp_path: Path, saved_garbage: list[object]) -> None:
    (tmp_path / "data").mkdir()
    kernel = make_kernel(entry_points=["mock", "tools"], settings={"data_dir": str(tmp_path / "data")})
    async with kernel.running():
        for _ in range(3):  # warm-up: caches, first imports
            await _one_request(kernel, tmp_path, "warm up")
        gc.collect()
        saved_garbage.clear()
        for n in range(10):
            await _one_request(kernel, tmp_path, f"hello {n} [[tokens 5]]")
        await asyncio.sleep(0)
        gc.collect()
        assert _kernel_garbage(saved_garbage) == Counter()


async def test_a_part_kept_without_its_session_fails_clearly(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        extra = session.extra
        extra["a"] = "1"  # while the session lives, the part reaches it
        await session.close()
        gone = weakref.ref(session)
        del session
        assert gone() is None  # freed at once: no collection needed
        with pytest.raises(ReferenceError, match="owner is gone"):
            extra["b"] = "2"


async def test_a_log_write_that_lands_after_its_session_is_gone_reports_nothing(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        session_log = SessionLog(cast(LogWriter, None), session, 1, None)
        await session.close()
        del session
        session_log.failed(OSError("disk away"))  # the report has nowhere to go: dropped
        assert session_log.failing
        assert session_log.due(0.0) is None and session_log.stored is None
