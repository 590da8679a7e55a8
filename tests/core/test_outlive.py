"""``outlive``: a cancelled waiter never cancels the work, and hears of its cancel once the work
is done; it wakes one loop pass sooner than ``asyncio.shield``."""

from __future__ import annotations

import asyncio

import pytest

from hermes_core.outlive import outlive


async def test_a_cancelled_waiter_waits_for_the_work_then_raises() -> None:
    release = asyncio.Event()

    async def work() -> int:
        await release.wait()
        return 42

    inner = asyncio.ensure_future(work())
    seen: list[object] = []

    async def waiter() -> int:
        try:
            return await outlive(inner)
        except asyncio.CancelledError:
            seen.append(inner.result())  # done by the time the cancel is raised
            raise

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done() and not inner.done()  # the cancel waits for the work
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [42] and not inner.cancelled()


async def test_results_and_failures_come_through() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise KeyError("k")

    async def answers() -> str:
        await asyncio.sleep(0)
        return "ok"

    assert await outlive(asyncio.ensure_future(answers())) == "ok"
    with pytest.raises(KeyError):
        await outlive(asyncio.ensure_future(fails()))
    done = asyncio.get_running_loop().create_future()
    done.set_result(7)
    assert await outlive(done) == 7
    cancelled = asyncio.get_running_loop().create_future()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outlive(cancelled)


async def _passes_to_wake(wait: object) -> int:
    """Loop passes between a future's result and the wake-up of a task awaiting it via ``wait``."""
    fut = asyncio.get_running_loop().create_future()
    woke = asyncio.Event()

    async def waiter() -> None:
        await wait(fut)  # type: ignore[operator]
        woke.set()

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)
    fut.set_result(None)
    passes = 0
    while not woke.is_set():
        await asyncio.sleep(0)
        passes += 1
    await task
    return passes


async def test_it_wakes_sooner_than_shield() -> None:
    assert await _passes_to_wake(outlive) < await _passes_to_wake(asyncio.shield)
