"""The kernel's one task that writes every session's event log (see :mod:`hermes_core.event_log.writer`).

Each pass asks every log woken since the last pass for the write it wants, sends them all in one
``write_event_chunks`` call, and hands each log its outcome; events appended meanwhile wait for
the next pass, so batches grow with the load. A call that raises is retried after ``RETRY_S``.

A log's queued events are written ``FLUSH_S`` after the first of them was queued (at once when
the log is closing or a reader waits on ``durable``): the events that open a turn are written
after its first token went out, not in its way, a turn shorter than that is written in one go,
and a streaming turn makes one chunk per interval.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from hermes_core.event_log.store import ChunkWrite, EventChunk, EventLogStore
from hermes_core.event_log.writer import SessionLog

log = logging.getLogger("hermes.event_log")
RETRY_S = 0.5


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

    def wake(self, session_log: SessionLog) -> None:
        """Have the writer look at ``session_log`` again now."""
        self._dirty[session_log] = None
        if self._idle.is_set():
            self._idle.clear()
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
        while True:
            now = time.monotonic()
            writes: list[tuple[SessionLog, list[ChunkWrite]]] = []
            nearest: float | None = None
            for session_log in list(self._dirty):
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
            if not writes:
                if not any(s.pending for s in self._dirty):
                    self._idle.set()
                self._wake.clear()
                if nearest is None:
                    await self._wake.wait()
                else:
                    # A timer that wakes us like an event would, rather than wait_for: that runs
                    # the wait in a task of its own, a task and a loop pass per turn of a session.
                    timer = asyncio.get_running_loop().call_later(
                        max(0.0, nearest - time.monotonic()), self._wake.set
                    )
                    try:
                        await self._wake.wait()
                    finally:
                        timer.cancel()
                continue
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
            at = 0
            for session_log, built in writes:
                session_log.done(built, [bool(r) for r in results[at : at + len(built)]])
                at += len(built)
