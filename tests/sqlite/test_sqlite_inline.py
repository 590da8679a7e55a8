"""Small jobs run inline on the event loop while the database thread is idle: in order with
the queued ones, never waiting on another connection's lock, never checkpointing on the loop."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core import SessionNotFound
from hermes_sqlite.schema import GROUPING, connect
from hermes_sqlite.store import SqliteStorage
from hermes_sqlite.wal_watch import WalWatch
from hermes_sqlite.worker import INLINE_STREAK, DbThread
from tests.sqlite.test_sqlite_group_commit import _insert
from tests.timing import eventually, scaled

from .helpers import record, user

Job = Callable[[sqlite3.Connection], Any]


def _thread(path: Path, wal: WalWatch | None = None) -> DbThread:
    def open_() -> sqlite3.Connection:
        conn = connect(path)
        conn.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)")
        return conn

    return DbThread("test-db", open_, wal=wal)


def _keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {k for (k,) in conn.execute("SELECT k FROM t")}


class _Ticker:
    """Measures the longest the loop went without running a 1 ms timer."""

    def __init__(self) -> None:
        self.ticks = 0
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Ticker:
        self._task = asyncio.create_task(self._run())
        await eventually(lambda: self.ticks >= 2, what="the ticker started")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now
            self.ticks += 1


async def test_a_job_submitted_while_the_thread_is_idle_runs_on_the_loop(tmp_path: Path) -> None:
    thread = _thread(tmp_path / "i.sqlite3")
    await thread.start()
    try:
        # Made on the thread, in a group: GROUPING is per thread, so the loop never sees it set.
        assert await thread.call(_insert("grouped"), group=True) == "grouped"
        await eventually(lambda: thread.idle, what="the thread waiting for work")

        def where(conn: sqlite3.Connection) -> tuple[str, bool]:
            return threading.current_thread().name, GROUPING.active

        future = thread.call(where, inline=True)
        assert future.done()  # ran during the call
        assert await future == (threading.current_thread().name, False)
        assert thread.inline_runs == 1

        # Without inline=True a job always goes to the thread.
        assert (await thread.call(where))[0] == "test-db"
        assert thread.inline_runs == 1
    finally:
        await thread.stop(lambda _conn: None)


async def test_jobs_keep_their_order_whether_run_inline_or_queued(tmp_path: Path) -> None:
    """Many jobs, some inline-able and some not, some awaited and some left in flight, some
    behind a busy thread: each runs after every job submitted before it, and answers in order."""
    thread = _thread(tmp_path / "i.sqlite3")
    await thread.start()
    try:
        ran: list[int] = []
        answered: list[int] = []
        gate = threading.Event()
        rng = random.Random(30)

        def job(i: int) -> Job:
            def run(_conn: sqlite3.Connection) -> int:
                ran.append(i)
                if i == 100:
                    gate.wait(10)  # the thread is busy for a while from here on
                return i

            return run

        futures: list[asyncio.Future[int]] = []
        for i in range(400):
            future = thread.call(job(i), inline=rng.random() < 0.7, group=rng.random() < 0.3)
            future.add_done_callback(lambda f: answered.append(f.result()))
            futures.append(future)
            pick = rng.random()
            held = 100 <= i < 150  # awaiting now would wait for the gate
            if pick < 0.3 and not held:
                await future  # awaited: an inline-able job after it finds the thread idle again
            elif pick < 0.5:
                await asyncio.sleep(0)  # handed to the thread, maybe not taken yet
            if i == 150:
                gate.set()
        gate.set()
        assert await asyncio.gather(*futures) == list(range(400))
        assert ran == list(range(400))
        assert answered == list(range(400))
        assert 0 < thread.inline_runs < 400
    finally:
        await thread.stop(lambda _conn: None)


async def test_a_job_handed_over_but_not_yet_taken_is_never_overtaken(tmp_path: Path) -> None:
    thread = _thread(tmp_path / "i.sqlite3")
    await thread.start()
    try:
        ran: list[str] = []
        for round_ in range(100):
            ran.clear()
            await eventually(lambda: thread.idle, what="the thread waiting for work")
            first = thread.call(lambda _conn: ran.append("queued"))
            await asyncio.sleep(0)  # the hand-off: on the thread's queue, perhaps not taken yet
            second = thread.call(lambda _conn: ran.append("inline-able"), inline=True)
            await asyncio.gather(first, second)
            assert ran == ["queued", "inline-able"], round_
    finally:
        await thread.stop(lambda _conn: None)


async def test_an_inline_write_never_blocks_the_loop_on_another_writer(
    storage: SqliteStorage, db_path: Path
) -> None:
    await storage.create_session(record("s1"))
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE sessions SET title = 'theirs' WHERE id = 's1'")
        async with _Ticker() as ticker:
            before = storage.inline_runs
            # A read needs no write lock: it still runs inline.
            assert (await storage.get_session("s1")) is not None
            assert storage.inline_runs == before + 1
            append = asyncio.ensure_future(storage.append_rows("s1", [user("mine")]))
            seen = ticker.ticks
            await eventually(lambda: ticker.ticks >= seen + 20, what="the loop ticking meanwhile")
            assert not append.done()  # waiting on the thread for the other writer
            other.execute("COMMIT")
            (row_id,) = await asyncio.wait_for(append, scaled(10))
        assert ticker.longest < scaled(1.0), f"the loop stalled {ticker.longest * 1000:.0f} ms"
    finally:
        other.close()
    assert storage.inline_runs == before + 1  # the write went to the thread
    assert [r.id for r in await storage.load_rows("s1")] == [row_id]
    assert (await storage.get_session("s1")).title == "theirs"  # type: ignore[union-attr]


async def test_an_inline_job_that_fails_fails_alone(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite3"
    thread = _thread(path)
    await thread.start()
    try:
        outcomes = []
        for job in (_insert("a"), _insert("b", fail=True), _insert("c"), _insert("a")):
            await asyncio.sleep(0)  # a loop step of its own each (see INLINE_STREAK)
            await eventually(lambda: thread.idle, what="the thread waiting for work")
            future = thread.call(job, inline=True)
            assert future.done()
            outcomes.append(future.exception() or future.result())
        assert outcomes[0] == "a" and outcomes[2] == "c"
        assert isinstance(outcomes[1], ValueError)
        assert isinstance(outcomes[3], sqlite3.IntegrityError)
        assert thread.inline_runs == 4
        assert _keys(path) == {"a", "c"}
    finally:
        await thread.stop(lambda _conn: None)


async def test_a_failed_inline_append_leaves_the_storage_working(
    storage: SqliteStorage, db_path: Path
) -> None:
    await storage.create_session(record("s1"))
    await storage.append_rows("s1", [user("one")])
    assert [r.content for r in await storage.load_rows("s1")] == ["one"]  # cached from here on
    before = storage.inline_runs
    try:
        await storage.append_rows("nobody", [user("lost")])
    except SessionNotFound:
        pass
    else:
        raise AssertionError("an append to an unknown session succeeded")
    await storage.append_rows("s1", [user("two")])
    assert [r.content for r in await storage.load_rows("s1")] == ["one", "two"]
    assert storage.inline_runs >= before + 2


async def test_a_caller_awaiting_job_after_job_still_lets_other_tasks_run(tmp_path: Path) -> None:
    thread = _thread(tmp_path / "i.sqlite3")
    await thread.start()
    try:
        await eventually(lambda: thread.idle, what="the thread waiting for work")
        other_ran = asyncio.Event()
        other = asyncio.create_task(asyncio.sleep(0))
        other.add_done_callback(lambda _t: other_ran.set())
        seen: list[bool] = []
        for _ in range(INLINE_STREAK * 3):
            await thread.call(lambda _conn: None, inline=True)
            seen.append(other_ran.is_set())
        assert seen.index(True) <= INLINE_STREAK + 1
        assert thread.inline_runs >= INLINE_STREAK
    finally:
        await thread.stop(lambda _conn: None)


async def test_only_the_thread_checkpoints_and_the_wal_stays_bounded(tmp_path: Path) -> None:
    """Commits made inline on the loop never run a checkpoint there (automatic ones are off);
    the thread runs them once the log is long enough, so it stays bounded."""
    path = tmp_path / "i.sqlite3"
    limit = 64
    thread = _thread(path, WalWatch(path, limit=limit))
    await thread.start()
    checkpoints: list[str] = []
    try:
        await thread.call(
            lambda conn: conn.set_trace_callback(
                lambda sql: (
                    checkpoints.append(threading.current_thread().name) if "checkpoint(" in sql else None
                )
            )
        )
        assert await thread.call(lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 0
        for i in range(limit * 8):
            await thread.call(_insert(f"k{i}"), inline=True)
        assert thread.inline_runs > limit * 4
        assert checkpoints and set(checkpoints) == {"test-db"}
        frame = 4096 + 24
        wal = path.with_name(path.name + "-wal")
        assert wal.stat().st_size <= (limit + 8) * frame + 32
        assert len(_keys(path)) == limit * 8
    finally:
        await thread.stop(lambda _conn: None)


async def test_the_wal_index_says_how_many_frames_wait(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite3"
    watch = WalWatch(path, limit=10)
    conn = connect(path)
    try:
        conn.execute("CREATE TABLE t (k)")
        for i in range(20):
            conn.execute("INSERT INTO t VALUES (?)", (i,))
        waiting = watch.waiting()
        _, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert waiting == frames - 0 and frames >= 20 and copied == frames
        assert watch.waiting() == 0
        assert not watch.due()
        conn.execute("INSERT INTO t VALUES (1)")
        assert watch.waiting() == 1  # the log starts over once all of it was copied back
    finally:
        conn.close()
        watch.close()


async def test_the_thread_says_whether_a_job_submitted_now_would_run_inline(tmp_path: Path) -> None:
    """``would_run_inline`` answers as ``call`` then decides: yes while the thread waits for work
    and nothing of this loop is in flight, no while a job is queued or running, or once the
    loop has had its inline streak in this step."""
    thread = _thread(tmp_path / "w.sqlite3")
    await thread.start()
    try:
        await eventually(lambda: thread.idle, what="the thread waiting for work")
        assert thread.would_run_inline()
        release = threading.Event()

        def blocked(conn: sqlite3.Connection) -> None:
            release.wait(scaled(10))

        running = thread.call(blocked)  # queued: it runs on the thread
        assert not thread.would_run_inline()
        await eventually(lambda: not thread.idle, what="the thread running the job")
        assert not thread.would_run_inline()
        release.set()
        await running
        await eventually(lambda: thread.idle, what="the thread idle again")
        assert thread.would_run_inline()
        for n in range(INLINE_STREAK):
            assert thread.call(_insert(f"s{n}"), inline=True).done()
        assert not thread.would_run_inline()  # the rest of this step's jobs are queued
        await asyncio.sleep(0)
        await eventually(lambda: thread.would_run_inline(), what="a new loop step")
    finally:
        await thread.stop(lambda _conn: None)
    assert not thread.would_run_inline()  # stopped: nothing runs anywhere


async def test_the_store_tells_the_kernel_when_its_writes_run_on_the_loop(tmp_path: Path) -> None:
    """``writes_on_loop``: yes while the database thread is idle (a small write runs inline), no
    while a write is on its way through the thread (a burst's writes share its commit)."""
    storage = SqliteStorage(tmp_path / "s.sqlite3")
    await storage.open()
    try:
        await storage.create_session(record("s1"), [])
        await eventually(storage.writes_on_loop, what="an idle database thread")
        many = [user(f"row {n}") for n in range(200)]  # too many to run inline
        writing = asyncio.create_task(storage.append_rows("s1", many))
        await asyncio.sleep(0)  # the task submits the write and waits for it
        assert not writing.done()
        assert not storage.writes_on_loop()
        assert len(await writing) == 200
        await eventually(storage.writes_on_loop, what="the thread idle again")
    finally:
        await storage.close()
    assert not storage.writes_on_loop()
