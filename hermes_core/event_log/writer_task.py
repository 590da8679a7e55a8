"""The kernel's one task that writes every session's event log, and the clock its passes keep
(see :mod:`hermes_core.event_log.writer`).

Each pass asks every log woken since the last pass for the write it wants, sends them all in one
``write_event_chunks`` call, and hands each log its outcome; events appended meanwhile wait for
the next pass, so batches grow with the load. A call that raises is retried after ``RETRY_S``.

A log's queued events are written at the first tick of a clock shared by every log (every
``FLUSH_S``, longer while a tick writes more than ``CHUNKS_PER_TICK`` chunks: see
``flush_interval``) after the first of them was queued (at once when the log is closing or a reader waits
on ``durable``): a turn shorter than that is mostly written in one go, and a streaming turn makes
one chunk per interval. Every session streaming at once is written in the same pass, one storage
call per tick, rather than each on a clock of its own (a pass, a storage round trip and two
thread hand-offs per session and interval, which with hundreds of streams cost more than the
chunks themselves). An event that makes a log due sooner than the writer planned to look wakes
it; any other event only joins the next pass.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes_core.event_log.store import ChunkWrite, EventChunk, EventLogStore

if TYPE_CHECKING:
    from hermes_core.event_log.writer import SessionLog

log = logging.getLogger("hermes.event_log")
RETRY_S = 0.5
#: A queued event is written at the next multiple of this (of the monotonic clock: one tick for
#: every log), so within this long (at once for a closing log or a reader waiting on ``durable``):
#: a streaming turn makes one provisional chunk per interval, not per token.
FLUSH_S = 0.05
#: About how many provisional chunks one tick writes at most: with more sessions streaming at once
#: the tick stretches (up to ``MAX_FLUSH_S``), so that each chunk holds more of its stream instead
#: of the log writing a chunk per token (1,000 streams at 10 tok/s, at 50 ms).
CHUNKS_PER_TICK = 100
MAX_FLUSH_S = 0.5
#: Longest a pass keeps the event loop before it lets the streams run: building (and settling)
#: every streaming session's chunk in one step stalled them all, 46 ms a pass (118 ms at worst)
#: at 1,000 streams and 6 ms (24 ms) at 200, measured on the 2-core reference machine.
SLICE_S = 0.002


def flush_tick(now: float, interval: float = FLUSH_S) -> float:
    """The first tick of the writer's shared clock after ``now``: when events queued at ``now``
    are written. Every session's provisional chunk of an interval is due at the same tick, so the
    writer makes one pass (one storage call) per tick for all of them."""
    return (now // interval + 1.0) * interval


def flush_interval(chunks: int) -> float:
    """The tick's length after a tick wrote ``chunks`` provisional chunks: ``FLUSH_S``, stretched
    when there were more than ``CHUNKS_PER_TICK`` of them (at most ``MAX_FLUSH_S``)."""
    return min(MAX_FLUSH_S, FLUSH_S * max(1.0, chunks / CHUNKS_PER_TICK))


class LogWriter:
    """The kernel's one task that writes every session's event log.

    :param store: the storage backend's event-log part.
    :param on_trim: called (as a task) with a log whose size should be checked against retention.
    """

    def __init__(self, store: EventLogStore, on_trim: Callable[[SessionLog, EventChunk], Any]) -> None:
        self.store = store
        self._on_trim = on_trim
        self._dirty: dict[SessionLog, None] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        # When the sleeping writer plans its next pass (inf: only when woken); None while it
        # runs a pass (it looks at every log before it sleeps again).
        self._until: float | None = None
        #: The length of the tick on which provisional chunks are due (see ``flush_interval``).
        self.interval = FLUSH_S
        self._rang = False  # the sleeping writer's planned time came (set by its timer)

    async def _settle(self, writes: list[tuple[SessionLog, list[ChunkWrite]]], results: list[Any]) -> None:
        """Hand each log the outcome of its writes, letting the streams run every ``SLICE_S``
        (a cancellation meanwhile settles the rest at once: no log is left in flight)."""
        at = 0
        slice_end = time.perf_counter() + SLICE_S
        for index, (session_log, built) in enumerate(writes):
            if time.perf_counter() > slice_end:
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    for rest, rest_built in writes[index:]:
                        rest.done(rest_built, [bool(r) for r in results[at : at + len(rest_built)]])
                        at += len(rest_built)
                    raise
                slice_end = time.perf_counter() + SLICE_S
            session_log.done(built, [bool(r) for r in results[at : at + len(built)]])
            at += len(built)

    def _ring(self) -> None:
        self._rang = True
        self._wake.set()

    def wake(self, session_log: SessionLog, at: float | None = None) -> None:
        """Have the writer look at ``session_log`` again: now, or at ``at`` (a monotonic time)
        when that is soon enough.

        With ``at``, the writer is woken only when it sleeps until later than that; otherwise
        its next pass, planned for ``at`` or earlier, looks at the log anyway (the provisional
        chunks of all streaming sessions are due at the same ticks: one pass each).
        """
        self._dirty[session_log] = None
        if self._idle.is_set():
            self._idle.clear()
        until = self._until
        if at is not None and until is not None and at >= until:
            return
        if not self._wake.is_set():
            self._wake.set()

    def maybe_trim(self, session_log: SessionLog, chunk: EventChunk) -> None:
        """Hand a log and the chunk it just compacted to the retention check."""
        self._on_trim(session_log, chunk)

    async def flush(self) -> None:
        """Write what is queued now, and wait until nothing is queued or being written
        (compactions may still be due)."""
        for session_log in list(self._dirty):
            if session_log.pending:
                session_log.urgent = True
        self._wake.set()
        while not self._idle.is_set():
            await self._idle.wait()

    async def run(self) -> None:
        """Write until cancelled (the kernel runs this as a background task, cancelled at
        shutdown once every session is closed)."""
        timed = False  # the pass runs because the planned time came (a tick), not on a wake-up
        while True:
            now = time.monotonic()
            writes: list[tuple[SessionLog, list[ChunkWrite]]] = []
            nearest: float | None = None
            slice_end = time.perf_counter() + SLICE_S
            try:
                for session_log in list(self._dirty):
                    if time.perf_counter() > slice_end:
                        await asyncio.sleep(0)  # the streams' turn; events queued meanwhile wait
                        now, slice_end = time.monotonic(), time.perf_counter() + SLICE_S
                    built = session_log.build(now)
                    if built:
                        writes.append((session_log, built))
                        continue
                    due = session_log.due(now)
                    if due is None:
                        del self._dirty[session_log]
                        session_log.woken = False  # its next event wakes the writer again
                    else:
                        nearest = due if nearest is None else min(nearest, due)
            except asyncio.CancelledError:
                for session_log, _ in writes:
                    session_log.failed(RuntimeError("the kernel stopped"))
                raise
            if not writes:
                if not any(s.pending for s in self._dirty):
                    self._idle.set()
                self._wake.clear()
                self._until = math.inf if nearest is None else nearest
                self._rang = False
                timer = None
                if nearest is not None:
                    # A timer that wakes us like an event would, rather than wait_for: that runs
                    # the wait in a task of its own, a task and a loop pass per turn of a session.
                    timer = asyncio.get_running_loop().call_later(
                        max(0.0, nearest - time.monotonic()), self._ring
                    )
                try:
                    await self._wake.wait()
                finally:
                    self._until = None
                    if timer is not None:
                        timer.cancel()
                timed = self._rang
                continue
            if timed:
                # A tick's pass: as many provisional chunks as sessions streaming at once.
                self.interval = flush_interval(sum(s.inflight_kind == "provisional" for s, _ in writes))
                timed = False
            try:
                results = await self.store.write_event_chunks([w for _, built in writes for w in built])
            except asyncio.CancelledError:
                for session_log, _ in writes:
                    session_log.failed(RuntimeError("the kernel stopped"))
                raise
            except Exception as exc:
                log.warning("writing the event log failed: %s", exc)
                for session_log, _ in writes:
                    session_log.failed(exc)
                await asyncio.sleep(RETRY_S)
                continue
            await self._settle(writes, results)
