"""A dedicated database thread: run callables on one SQLite connection off the event loop.

Jobs run in submission order on the thread that owns the connection. Each result goes into a
per-loop :class:`LoopWaker` inbox; the thread wakes the loop only when the inbox was empty,
and a reader callback on the loop settles everything the inbox holds.

Why not ``call_soon_threadsafe`` per result: waking the loop is the dearest part of a small
job. Measured on a 2-core machine, awaiting a no-op job cost 42-47 µs (28 µs of it on the
loop's CPU) that way, and 22-26 µs (13-17 µs on the loop) with a pipe of our own, one byte per
wake-up and one read. When jobs are already queued, the thread also keeps results back (for up
to :data:`BATCH_WINDOW_S`) and hands them over in one wake-up: the woken loop would otherwise
compete with this thread for the GIL. With 5,000 one-row appends in flight, batching gave
1.5-2x the throughput of waking the loop per result.

Group commit: jobs queued with ``group=True`` that find others queued behind them run in one
transaction (``BEGIN IMMEDIATE`` … ``COMMIT``), each in a savepoint of its own, so a burst of
many sessions' writes pays for one commit instead of one each (see
:func:`hermes_sqlite.schema.write_transaction`). A job that fails rolls back to its savepoint
and fails alone; when the group's ``COMMIT`` fails, every job of the group fails. No result of
a grouped job reaches its caller before the group's ``COMMIT`` has returned, so what a caller was
told is stored is exactly as durable as with one transaction per job.

Coalesced hand-off: :meth:`DbThread.call` does not put each job on the queue. The first call
of a loop step opens a pending list on that loop's waker and schedules one flush with
``call_soon``; the calls after it in the same step only append. The flush puts the whole list
as one queue item, so jobs submitted together (many sessions' writes at once) wake the thread
once and reach it together, where group commit sees them as one burst. A job thus waits for
the rest of its loop step before the thread sees it, and the thread is woken as the loop is
about to go idle rather than in the middle of a step, where its Python would compete with the
loop's for the GIL. On a new chat with a tenant's stored key and budgets
(``bench/bench_budget_pairs.py --sqlite --scoped-key``, 2 shared cores) the TTFT that budgets
add fell in six paired runs of seven (by 0.07-0.46 ms, most at load 4-4.5; the seventh: equal)
and TTFT with them in seven of seven, although nearly every hand-off there
held one job (counted: 710 of one job and 70 of two): that path awaits each job before the next.
"""

from __future__ import annotations

import asyncio
import collections
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from hermes_core import StorageError
from hermes_sqlite.loop_waker import Item, LoopWaker, Outcome, drain_and_close
from hermes_sqlite.schema import GROUPING

T = TypeVar("T")

BATCH_WINDOW_S = 0.001
#: At most this many jobs share one transaction.
GROUP_MAX = 64


class DbThread:
    """One thread, one connection, a FIFO queue of jobs.

    :param name: the thread's name (shows in debuggers and thread dumps).
    :param opener: makes the connection; it runs on the thread as the first job of ``start``.
    :param on_group_failure: called on the thread when a group's transaction did not commit
        (what the connection's companions remember of its writes is then untrue).
    """

    def __init__(
        self,
        name: str,
        opener: Callable[[], sqlite3.Connection],
        on_group_failure: Callable[[], None] | None = None,
    ) -> None:
        self._name = name
        self._opener = opener
        self._on_group_failure = on_group_failure
        # Each item is the jobs one loop step submitted; None tells the thread to end.
        self._queue: queue.SimpleQueue[list[Item] | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None
        self._accepting = False
        self._ended = False  # the end sentinel has been queued
        # Touched only on loop threads; normally there is exactly one loop.
        self._wakers: dict[asyncio.AbstractEventLoop, LoopWaker] = {}

    async def start(self) -> None:
        """Start the thread and open the connection on it.

        :raises StorageError: when the connection cannot be opened (the thread then stops).
        """
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._accepting = True
        try:
            await self.call(self._open)
        except BaseException:
            self._accepting = False
            self._end()
            self._close_wakers()
            raise

    def _open(self, _conn: sqlite3.Connection) -> None:
        self._conn = self._opener()

    def _waker(self, loop: asyncio.AbstractEventLoop) -> LoopWaker:
        """Return the waker of ``loop``, making it on first use (runs on that loop)."""
        waker = self._wakers.get(loop)
        if waker is None:
            # Loops that have closed since (e.g. one asyncio.run per CLI command) are done.
            for old in [old for old in self._wakers if old.is_closed()]:
                self._wakers.pop(old).close()
            waker = self._wakers[loop] = LoopWaker(loop)
        return waker

    def call(self, job: Callable[[sqlite3.Connection], T], *, group: bool = False) -> asyncio.Future[T]:
        """Queue ``job(connection)`` and return a future for its result.

        Cancelling the future does not stop a job that is already queued; it only drops its
        result.

        :param job: a function of the connection; it runs on the database thread.
        :param group: the job may share one transaction with other such jobs queued with it
            (its own transactions must be :func:`~hermes_sqlite.schema.write_transaction`'s).
        :returns: a future resolved on the calling loop.
        :raises StorageError: when the thread has been stopped.
        """
        if not self._accepting:
            raise StorageError("storage is closed")
        loop = asyncio.get_running_loop()
        waker = self._wakers.get(loop) or self._waker(loop)
        future: asyncio.Future[T] = loop.create_future()
        pending = waker.pending
        if not pending:
            loop.call_soon(self._flush, waker)
        pending.append((job, waker, future, group))
        return future

    def _flush(self, waker: LoopWaker) -> None:
        """Hand the jobs ``waker``'s loop submitted this step to the thread (runs on that loop)."""
        items = waker.pending
        if not items:
            return
        waker.pending = []
        if not self._ended:
            self._queue.put(items)
            return
        # Submitted on another loop while this one stopped the thread: nothing will run them.
        for _, _, future, _ in items:
            if not future.done():
                future.set_exception(StorageError("storage is closed"))

    def _end(self) -> None:
        """Hand over what this loop still holds, then tell the thread to end."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        waker = self._wakers.get(loop) if loop is not None else None
        if waker is not None:
            self._flush(waker)
        self._ended = True
        self._queue.put(None)

    async def stop(self, final: Callable[[sqlite3.Connection], None]) -> None:
        """Refuse new jobs, let queued ones finish, run ``final`` and close the connection.

        :param final: last work on the connection (e.g. ``PRAGMA optimize``); its error is
            raised after the connection is closed.
        """
        if not self._accepting:
            return
        done = self.call(lambda conn: self._last(conn, final))
        self._accepting = False
        self._end()
        try:
            await done
        finally:
            if self._thread is not None:
                # The thread ends right after the sentinel; this join waits a moment at most.
                self._thread.join(timeout=1.0)
            self._close_wakers()

    def _last(self, conn: sqlite3.Connection, final: Callable[[sqlite3.Connection], None]) -> None:
        try:
            final(conn)
        finally:
            conn.close()
            self._conn = None

    def _close_wakers(self) -> None:
        """Close every loop's waker; those of other, still running loops close on their loop."""
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        wakers, self._wakers = self._wakers, {}
        for loop, waker in wakers.items():
            if loop is current:
                drain_and_close(waker)
                continue
            if loop.is_closed():
                waker.close()
                continue
            try:
                loop.call_soon_threadsafe(drain_and_close, waker)
            except RuntimeError:
                waker.close()  # closed meanwhile

    def _run(self) -> None:
        get, empty, clock = self._queue.get, self._queue.empty, time.perf_counter
        # Wakers holding results whose loops have not been told yet.
        untold: set[LoopWaker] = set()
        started = 0.0
        # Jobs taken from the queue and not run yet, in submission order.
        backlog: collections.deque[Item] = collections.deque()
        ending = False
        while True:
            if not backlog:
                if ending:
                    break
                if untold and empty():
                    for waker in untold:
                        waker.notify()  # nothing more queued: hand back what is done
                    untold.clear()
                # Blocks only when everything done has been handed back.
                items = get()
                if items is None:
                    break
                backlog.extend(items)
            item = backlog.popleft()
            if not untold:
                started = clock()
            batch = [item]
            if item[3]:
                while len(batch) < GROUP_MAX:
                    if not backlog:
                        if ending or empty():
                            break
                        items = get()
                        if items is None:
                            ending = True
                            break
                        backlog.extend(items)
                    if not backlog[0][3]:
                        break
                    batch.append(backlog.popleft())
            outcomes = self._one(item) if len(batch) == 1 else self._group(batch)
            for (_, waker, _, _), outcome in zip(batch, outcomes, strict=True):
                waker.inbox.append(outcome)
                untold.add(waker)
            if clock() - started > BATCH_WINDOW_S:
                for waker in untold:
                    waker.notify()
                untold.clear()
        for waker in untold:
            waker.notify()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _one(self, item: Item) -> list[Outcome]:
        job, _, future, _ = item
        try:
            return [(future, job(self._conn), None)]  # type: ignore[arg-type]
        except BaseException as exc:
            return [(future, None, exc)]

    def _group(self, batch: list[Item]) -> list[Outcome]:
        """Run ``batch`` in one transaction, each job in a savepoint; return their outcomes."""
        conn = self._conn
        assert conn is not None
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            return [outcome for item in batch for outcome in self._one(item)]
        outcomes: list[Outcome] = []
        GROUPING.active = True
        try:
            for at, (job, _, future, _) in enumerate(batch):
                conn.execute("SAVEPOINT hermes_job")
                try:
                    outcomes.append((future, job(conn), None))
                    conn.execute("RELEASE hermes_job")
                    continue
                except BaseException as exc:
                    outcomes.append((future, None, exc))
                    if conn.in_transaction:
                        conn.execute("ROLLBACK TO hermes_job")
                        conn.execute("RELEASE hermes_job")
                        continue
                # SQLite rolled the whole transaction back (e.g. disk full): the jobs before
                # this one are undone too, and the rest run one transaction each.
                self._forget()
                lost = outcomes[-1][2]
                outcomes = [(f, None, lost) for f, _, _ in outcomes]
                GROUPING.active = False
                for item in batch[at + 1 :]:
                    outcomes.extend(self._one(item))
                return outcomes
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._forget()
            return [(item[2], None, exc) for item in batch]
        finally:
            GROUPING.active = False
        return outcomes

    def _forget(self) -> None:
        if self._on_group_failure is not None:
            self._on_group_failure()
