"""A dedicated database thread: run callables on one SQLite connection off the event loop.

Jobs run in submission order on the thread that owns the connection. Each result goes into a
per-loop :class:`LoopWaker` inbox; the thread wakes the loop only when the inbox was empty,
and a reader callback on the loop settles everything the inbox holds.

Why not ``call_soon_threadsafe`` per result: waking the loop is the dearest part of a small
job, and a pipe of our own (one byte per wake-up, one read) costs about half. When jobs are
already queued, the thread also keeps results back (for up to :data:`BATCH_WINDOW_S`) and hands
them over in one wake-up, rather than have the woken loop compete with it for the GIL (the
figures of both are in ``bench/README.md``, tenth pass).

Group commit: jobs queued with ``group=True`` that find others queued behind them run in one
transaction, each in a savepoint of its own (:mod:`hermes_sqlite.group_commit`). No result of a
grouped job reaches its caller before the group's ``COMMIT`` has returned, so what a caller was
told is stored is exactly as durable as with one transaction per job.

Coalesced hand-off: :meth:`DbThread.call` does not put each job on the queue. The first call
of a loop step opens a pending list on that loop's waker and schedules one flush with
``call_soon``; the calls after it in the same step only append. The flush puts the whole list
as one queue item, so jobs submitted together (many sessions' writes at once) wake the thread
once and reach it together, where group commit sees them as one burst. A job thus waits for
the rest of its loop step before the thread sees it, and the thread is woken as the loop is
about to go idle rather than in the middle of a step, where its Python would compete with the
loop's for the GIL (the paired figures are in ``bench/README.md``).

Inline jobs: a round trip through the thread costs a lone job 1-1.7 ms on 2 shared cores. A
small job submitted with ``inline=True`` while the thread waits for work, and while nothing of its
loop is pending, queued, running or waiting to be handed back, runs on the loop at once, under the
lock the thread holds except while it waits: jobs still run one at a time, the connection's
companions (row cache, write memos) keep one user, and no job overtakes an earlier one of its
loop. An inline job sees a busy timeout of 0, and one that meets a lock is queued as if it had
not run (:mod:`hermes_sqlite.inline` says which jobs that is safe for); the loop never runs a
checkpoint (:mod:`hermes_sqlite.wal_watch`).
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
from hermes_sqlite.group_commit import run_group, run_one
from hermes_sqlite.inline import is_busy
from hermes_sqlite.loop_waker import Item, LoopWaker, drain_and_close
from hermes_sqlite.wal_watch import WalWatch

T = TypeVar("T")

BATCH_WINDOW_S = 0.001
#: At most this many jobs share one transaction.
GROUP_MAX = 64
#: At most this many jobs run inline in one loop step; the next ones are queued. An inline
#: job's future is done when ``call`` returns, so awaiting it does not give the loop a turn; and a
#: burst's writes share one commit on the thread, where inline they took one each on the loop
#: (16 made c=50 worse: bench/README.md, tenth pass). A lone request's jobs come one a step.
INLINE_STREAK = 2


class DbThread:
    """One thread, one connection, a FIFO queue of jobs.

    :param name: the thread's name (shows in debuggers and thread dumps).
    :param opener: makes the connection; it runs on the thread as the first job of ``start``.
    :param on_group_failure: called on the thread when a group's transaction did not commit
        (what the connection's companions remember of its writes is then untrue).
    :param wal: when given, the thread checkpoints the write-ahead log itself (the connection's
        automatic checkpoint must be off: the loop never runs one).
    """

    def __init__(
        self,
        name: str,
        opener: Callable[[], sqlite3.Connection],
        on_group_failure: Callable[[], None] | None = None,
        wal: WalWatch | None = None,
    ) -> None:
        self._name = name
        self._opener = opener
        self._on_group_failure = on_group_failure
        self._wal = wal
        # Held by the thread except while it waits for work; a job runs only under it, on the
        # thread or inline on a loop, so the connection and its companions have one user.
        self._lock = threading.Lock()
        # What the connection's busy timeout is on the thread (in ms), and whether an inline
        # job has set it to 0 since the thread last ran.
        self._busy_ms = 0
        self._quick = False
        self._changes = 0  # the connection's total_changes when the WAL was last looked at
        self._wal_due = False  # an inline job found the WAL due: the loop queues a checkpoint
        self.inline_runs = 0  # jobs run inline so far (for tests and benchmarks)
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

    @property
    def idle(self) -> bool:
        """Whether the thread is waiting for work (a loop may run jobs inline meanwhile)."""
        return not self._lock.locked()

    def would_run_inline(self) -> bool:
        """Whether a job submitted now with ``inline`` would run on this loop (as :meth:`call`
        decides it)."""
        waker = self._wakers.get(asyncio.get_running_loop())
        if waker is not None and (waker.outstanding or waker.streak >= INLINE_STREAK):
            return False
        return self._accepting and not self._lock.locked()

    def _open(self, _conn: sqlite3.Connection) -> None:
        conn = self._opener()
        self._busy_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
        self._conn = conn

    def _waker(self, loop: asyncio.AbstractEventLoop) -> LoopWaker:
        """Return the waker of ``loop``, making it on first use (runs on that loop)."""
        waker = self._wakers.get(loop)
        if waker is None:
            # Loops that have closed since (e.g. one asyncio.run per CLI command) are done.
            for old in [old for old in self._wakers if old.is_closed()]:
                self._wakers.pop(old).close()
            waker = self._wakers[loop] = LoopWaker(loop)
        return waker

    def call(
        self, job: Callable[[sqlite3.Connection], T], *, group: bool = False, inline: bool = False
    ) -> asyncio.Future[T]:
        """Queue ``job(connection)`` and return a future for its result.

        Cancelling the future does not stop a job that is already queued; it only drops its
        result.

        With ``inline``, the job runs right here on the loop instead when the thread is idle
        (waiting for work) and nothing this loop submitted is still pending, queued, running or
        waiting to be handed back, so it never overtakes a job of its loop; the future is then
        done on return. It runs with a busy timeout of 0: when another connection holds the lock
        it needs, it is queued after all, as if it had not run.

        :param job: a function of the connection; it runs on the database thread (or inline).
        :param group: the job may share one transaction with other such jobs queued with it
            (its own transactions must be :func:`~hermes_sqlite.schema.write_transaction`'s).
        :param inline: the job may run on the loop. Only for small jobs that, failing with
            SQLITE_BUSY, have had no effect: one ``write_transaction`` (its ``BEGIN IMMEDIATE``
            is what meets another writer), or reads.
        :returns: a future resolved on the calling loop.
        :raises StorageError: when the thread has been stopped.
        """
        if not self._accepting:
            raise StorageError("storage is closed")
        loop = asyncio.get_running_loop()
        waker = self._wakers.get(loop) or self._waker(loop)
        future: asyncio.Future[T] = loop.create_future()
        if (
            inline
            and not waker.outstanding
            and waker.streak < INLINE_STREAK
            and self._lock.acquire(blocking=False)
        ):
            try:
                ran = self._inline(job, future)
            finally:
                self._lock.release()
            if ran:
                if not waker.streak:
                    loop.call_soon(waker.end_streak)
                waker.streak += 1
                if self._wal_due:
                    self._wal_due = False
                    self._enqueue(waker, self._checkpoint, loop.create_future(), False)
                return future
        self._enqueue(waker, job, future, group)
        return future

    def _enqueue(
        self, waker: LoopWaker, job: Callable[[sqlite3.Connection], T], future: asyncio.Future[T], group: bool
    ) -> None:
        pending = waker.pending
        if not pending:
            waker.loop.call_soon(self._flush, waker)
        pending.append((job, waker, future, group))
        waker.outstanding += 1

    def _inline(self, job: Callable[[sqlite3.Connection], T], future: asyncio.Future[T]) -> bool:
        """Run ``job`` on the loop, holding the lock; say False when it met a busy lock."""
        conn = self._conn
        if conn is None:
            return False
        if not self._quick:
            conn.execute("PRAGMA busy_timeout = 0")
            self._quick = True
        try:
            result = job(conn)
        except Exception as exc:
            if is_busy(exc):
                if conn.in_transaction:  # not by a job fit to run inline; be safe anyway
                    conn.execute("ROLLBACK")
                return False
            future.set_exception(exc)
        else:
            future.set_result(result)
        self.inline_runs += 1
        if self._checkpoint_due(conn):
            self._wal_due = True
        return True

    def _checkpoint_due(self, conn: sqlite3.Connection) -> bool:
        """Say whether the last job wrote and left the WAL due for a checkpoint (under the lock)."""
        if self._wal is None or conn.total_changes == self._changes:
            return False
        self._changes = conn.total_changes
        return self._wal.due()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """The job the loop queues when an inline write found the WAL due."""
        if self._wal is not None:
            self._wal.checkpoint(conn)

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
        waker.outstanding -= len(items)
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
        lock = self._lock
        lock.acquire()
        try:
            self._serve()
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._wal is not None:
                self._wal.close()
            lock.release()

    def _idle_get(self, untold: set[LoopWaker]) -> list[Item] | None:
        """Hand back what is done and wait for work, with the lock let go meanwhile so that a
        loop may run small jobs inline (let go first: the loop woken next may submit at once)."""
        lock = self._lock
        lock.release()
        try:
            for waker in untold:
                waker.notify()
            untold.clear()
            items = self._queue.get()
        finally:
            lock.acquire()
        if self._quick and self._conn is not None:
            self._conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        self._quick = False
        return items

    def _serve(self) -> None:
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
                # With nothing more queued, hand back what is done; block only after that.
                items = self._idle_get(untold) if empty() else get()
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
            conn = self._conn
            outcomes = run_one(conn, item) if len(batch) == 1 else run_group(conn, batch, self._forget)
            for (_, waker, _, _), outcome in zip(batch, outcomes, strict=True):
                waker.inbox.append(outcome)
                untold.add(waker)
            conn = self._conn  # opened or closed by the job, maybe
            if conn is not None and self._checkpoint_due(conn):
                for waker in untold:
                    waker.notify()  # the answers need not wait for the checkpoint
                untold.clear()
                self._wal.checkpoint(conn)  # type: ignore[union-attr]  # _checkpoint_due: it is set
            if clock() - started > BATCH_WINDOW_S:
                for waker in untold:
                    waker.notify()
                untold.clear()
        for waker in untold:
            waker.notify()

    def _forget(self) -> None:
        if self._on_group_failure is not None:
            self._on_group_failure()
