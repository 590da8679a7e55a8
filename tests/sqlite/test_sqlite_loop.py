"""The database thread: the event loop keeps running, concurrent calls each get their answer."""

from __future__ import annotations

import asyncio
import time

from hermes_core import NewRow
from hermes_sqlite.store import SqliteStorage

from .helpers import record, user


async def test_the_loop_keeps_ticking_during_a_big_append(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    rows = [
        NewRow(role="tool", content="output line\n" * 40, call_id=f"tc_{i}_0", meta={"i": i, "ok": True})
        for i in range(2000)
    ]
    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    ids = await storage.append_rows("s1", rows)
    finished = time.perf_counter()
    stop.set()
    await task

    assert len(ids) == 2000
    during = [t for t in ticks if started < t < finished]
    # Done on the loop, a 2000-row transaction would allow no tick at all while it ran.
    assert len(during) >= 3, f"{len(during)} ticks in {(finished - started) * 1000:.0f} ms"


async def test_concurrent_calls_each_get_their_own_result(storage: SqliteStorage) -> None:
    await storage.create_session(record("a"))
    await storage.create_session(record("b"))

    appends = asyncio.gather(
        *(storage.append_rows("a" if i % 2 else "b", [user(f"m{i}")]) for i in range(200))
    )
    reads = asyncio.gather(storage.load_rows("a"), storage.get_session("b"))  # queued among the writes
    results, _ = await asyncio.gather(appends, reads)

    ids = [r[0] for r in results]
    assert len(set(ids)) == 200
    by_id = {rid: f"m{i}" for i, rid in enumerate(ids)}
    for session_id in ("a", "b"):
        loaded = await storage.load_rows(session_id)
        assert len(loaded) == 100
        assert all(by_id[r.id] == r.content for r in loaded)


async def test_a_cancelled_caller_does_not_break_the_storage(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))

    task = asyncio.create_task(storage.append_rows("s1", [user(str(i)) for i in range(500)]))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    # The write was already queued: it lands whole or not at all, and the storage still works.
    count = len(await storage.load_rows("s1"))
    assert count in (0, 500)
    await storage.append_rows("s1", [user("after")])
    assert len(await storage.load_rows("s1")) == count + 1


async def test_answers_beyond_one_settling_slice_all_land_in_order(storage: SqliteStorage) -> None:
    from hermes_sqlite.loop_waker import SETTLE_AT_ONCE

    await storage.create_session(record("many"))
    order: list[int] = []
    count = SETTLE_AT_ONCE * 8

    async def one(i: int) -> None:
        await storage.append_rows("many", [user(f"m{i}")])
        order.append(i)

    await asyncio.gather(*(one(i) for i in range(count)))

    assert order == list(range(count))  # in submission order, none lost
    assert [r.content for r in await storage.load_rows("many")] == [f"m{i}" for i in range(count)]


async def test_the_waker_settles_at_most_a_slice_per_pass() -> None:
    from hermes_sqlite.loop_waker import SETTLE_AT_ONCE, LoopWaker

    loop = asyncio.get_running_loop()
    waker = LoopWaker(loop)
    try:
        futures = [loop.create_future() for _ in range(SETTLE_AT_ONCE * 3 + 5)]
        futures[1].cancel()  # a caller that gave up: skipped, not counted
        waker.inbox.extend((future, i, None) for i, future in enumerate(futures))
        waker.drain()
        live = [f for f in futures if not f.cancelled()]
        assert sum(f.done() for f in live) == SETTLE_AT_ONCE
        for _ in range(4):
            await asyncio.sleep(0)
        assert all(f.done() for f in futures)
        assert [f.result() for f in live] == [i for i, f in enumerate(futures) if not f.cancelled()]
    finally:
        waker.close()
