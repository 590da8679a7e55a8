"""Closed sessions and finished turns are freed by reference counting, not by the cyclic
garbage collector (docs/reference/core.md#sessions-are-freed-at-release).

A session's parts and a turn's budget reach their owner through weak references
(:mod:`hermes_core.backref`), so nothing of a released session waits for a collection: under a
burst of requests a full collection would otherwise stall the event loop every second or so.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core import Kernel, TurnCompleted
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
