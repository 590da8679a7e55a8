"""Writing one session's event log: numbers handed out at emit, chunks written behind the turn
(docs/reference/core.md#the-event-log).

``SessionLog.append`` runs inside ``Session.emit``: it numbers the event and queues it, nothing
more, so the turn's hot path pays a few hundred nanoseconds per event. One kernel-wide task
(:class:`~hermes_core.event_log.writer_task.LogWriter`) writes what is queued, for every session
at once, in one storage call per pass; a session's queued events are written at the first tick
of the writer's shared ``FLUSH_S`` clock after the first of them was queued (at once when it
closes or a reader waits on them), so a short turn is mostly written once, a streaming one makes a
chunk per interval, not per token, and all the sessions streaming at once are written together.

The log decides when to write and what follows from each outcome; the chunks themselves
(provisional ones, compactions of the open tail, the sealed last one, the reservation each notes)
are made by :mod:`hermes_core.event_log.chunk_writes`. The open tail is compacted once no turn
runs and the log has been quiet for ``COMPACT_AFTER_S`` after a turn ended (so turns end up
compressed whole), when it grows past its limits (``TAIL_MAX_EVENTS`` events and
``TAIL_MAX_BYTES``, or a quarter of the retention limits when those are smaller), and at close:
a session closed right after its turn (the API server closes one per request) writes it once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Literal

from hermes_core.backref import BackRef
from hermes_core.event_log.chunk_writes import (
    COMPACT_LEVEL,
    PROVISIONAL_LEVEL,
    chunk_writes,
    is_sealed,
    seal_write,
)
from hermes_core.event_log.store import ChunkWrite, EventChunk
from hermes_core.event_log.waiters import StoredWaiters
from hermes_core.event_log.writer_task import flush_tick
from hermes_core.events import AnyEvent, TurnCompleted, TurnStarted
from hermes_core.outlive import within

if TYPE_CHECKING:
    from hermes_core.event_log.writer_task import LogWriter
    from hermes_core.session.live import Session

log = logging.getLogger("hermes.event_log")

FLUSH_EVENTS = 1024
COMPACT_AFTER_S = 0.5
TAIL_MAX_EVENTS = 4096
TAIL_MAX_BYTES = 1024 * 1024
#: While writes fail, at most this many events wait in memory; past it the session stops logging.
MAX_PENDING = 100_000

State = Literal["open", "broken", "closed"]
_set = object.__setattr__  # how an event gets its number (events are frozen)


class SessionLog:
    """The log of one live session (made by ``kernel.events`` when the session opens).

    :param writer: the kernel's writer task.
    :param session: the live session.
    :param next_seq: the number the next event gets.
    :param last_chunk: the newest stored chunk (None for an empty log).
    :param lost: numbers a crash lost just before ``next_seq`` (to note in the next chunk).
    """

    #: The live session, held weakly (the session holds its log); a write that lands after the
    #: session is gone reports nothing (see :meth:`_owner`).
    session: BackRef[Session] = BackRef()

    def __init__(
        self,
        writer: LogWriter,
        session: Session,
        next_seq: int,
        last_chunk: EventChunk | None,
        lost: tuple[int, int] | None = None,
        *,
        tail_max_events: int = TAIL_MAX_EVENTS,
        tail_max_bytes: int = TAIL_MAX_BYTES,
    ) -> None:
        self.writer = writer
        self.session = session
        self.session_id = session.id
        self._stored_session = False
        self.next_seq = next_seq
        self.durable = last_chunk.last_seq if last_chunk is not None else 0
        self.last_chunk = last_chunk
        self.last_sealed = last_chunk is None or is_sealed(last_chunk)
        self.pending: list[AnyEvent] = []
        self.inflight: list[AnyEvent] = []
        self.inflight_kind: Literal["provisional", "compact", "seal"] | None = None
        self.inflight_sealed = False
        self.tail: list[AnyEvent] = []
        self.tail_first: int | None = None
        self.tail_bytes = 0
        self.tail_chunks = 0
        self.tail_max_events = tail_max_events
        self.tail_max_bytes = tail_max_bytes
        self.tail_lost = lost
        self.turn_ended = False
        self.open_turn: tuple[str, int] | None = None
        self.last_append = time.monotonic()
        self.pending_due = 0.0
        self.urgent = False
        self.state: State = "open"
        # Taking events: open and not closing (one test on the hot path instead of two).
        self.taking = True
        # Woken and not looked at by the writer since: later appends need not wake it again.
        self.woken = False
        self.closing = False
        self._closed: asyncio.Future[None] | None = None
        self._waiters = StoredWaiters()
        self.failing = False  # the last write raised (storage away): closing does not wait
        self.written_since_check = 0

    def _owner(self) -> Session | _Gone:
        """The session, or a stand-in that drops reports once it is gone (a write can land
        after its session closed and was let go)."""
        return SessionLog.session.peek(self) or _GONE

    def _persisted(self) -> bool:
        """Whether storage holds the session (once it does, it always will: the answer is kept
        for when the session is gone)."""
        if not self._stored_session:
            session = SessionLog.session.peek(self)
            self._stored_session = session is not None and session.persisted
        return self._stored_session

    # -- the hot path ---------------------------------------------------------------------------
    def append(self, event: AnyEvent) -> None:
        """Number ``event`` and queue it (runs inside ``Session.emit``: keep it this short)."""
        if not self.taking:
            return
        seq = self.next_seq
        self.next_seq = seq + 1
        _set(event, "seq", seq)
        pending = self.pending
        pending.append(event)
        kind = type(event)
        if kind is TurnStarted:
            self.open_turn = (event.turn_id or "", seq)
        elif kind is TurnCompleted and self.open_turn is not None:
            self.open_turn = None
            self.turn_ended = True
        count = len(pending)
        if count == 1:
            # The first event since the last write: due at the next tick (the writer is woken
            # only when it planned to look later than that).
            self.pending_due = flush_tick(time.monotonic(), self.writer.interval)
            self.woken = True
            self.writer.wake(self, self.pending_due)
        elif not self.woken:
            self.woken = True
            self.writer.wake(self, self.pending_due)
        if count >= FLUSH_EVENTS or (self.failing and count > MAX_PENDING):
            self._many(count)

    def _many(self, count: int) -> None:
        """Many events are queued: write them without waiting out the interval, or give up."""
        if self.failing and count > MAX_PENDING:
            self._give_up()
        elif not self.urgent:
            self.urgent = True
            self.writer.wake(self)

    def _give_up(self) -> None:
        """Stop logging a session whose storage has refused every write for too long."""
        self.state, self.taking, self.pending = "broken", False, []
        self._owner().report_problem(
            "storage",
            f"the event log of this session stopped: storage refused its writes for {MAX_PENDING} events; "
            "it starts again when the session is opened again",
            once="event_log",
        )
        self._release_waiters()

    # -- what the writer asks -------------------------------------------------------------------
    @property
    def head(self) -> int:
        """The newest number handed out (0: none yet)."""
        return self.next_seq - 1

    def memory(self) -> list[AnyEvent]:
        """Every event still held in memory (the open tail, in flight, queued), in order."""
        return [*self.tail, *self.inflight, *self.pending]

    def due(self, now: float) -> float | None:
        """When the writer should look at this log again (None: only when woken)."""
        if self.state != "open" or not self._persisted():
            return None
        if self.closing or (self.pending and self.urgent):
            return now
        if self.pending:
            return self.pending_due
        if self.tail and self.open_turn is None and (self.turn_ended or self.tail_chunks > 1):
            return self.last_append + COMPACT_AFTER_S
        return None

    def build(self, now: float) -> list[ChunkWrite]:
        """Return the writes this log wants now (none yet: empty), moving queued events in flight.

        Several writes (of one call, so one transaction) when a compaction covers more than the
        tail's limit: chunks never hold more than that, so retention can drop part of a log.
        """
        if self.state != "open":
            return []
        if not self._persisted():
            if self.closing:
                self._finish()  # never stored: a session that is not kept keeps no log
            return []
        events = self.pending
        quiet = self.open_turn is None and now - self.last_append >= COMPACT_AFTER_S
        oversized = len(self.tail) + len(events) > self.tail_max_events
        compact = (bool(self.tail) or oversized) and (
            self.closing
            or oversized
            or self.tail_bytes > self.tail_max_bytes
            or (quiet and (self.turn_ended or self.tail_chunks > 1))
        )
        if not compact and not self.closing and (not events or (not self.urgent and now < self.pending_due)):
            return []  # nothing due yet
        if compact:
            writes = self._writes([*self.tail, *events], replace=bool(self.tail), level=COMPACT_LEVEL)
            self.inflight_kind = "compact"
        elif events:
            # With nothing in the tail, a closing log is written as it will stay.
            level = COMPACT_LEVEL if self.closing else PROVISIONAL_LEVEL
            writes = self._writes(events, replace=False, level=level)
            self.inflight_kind = "compact" if self.closing else "provisional"
        elif self.closing:
            last = self.last_chunk
            if last is None or self.last_sealed:
                self._finish()
                return []
            writes = [seal_write(self.session_id, last, self.durable)]
            self.inflight_kind = "seal"
        else:
            return []
        self.inflight, self.pending = events, []
        self.urgent = False
        self.inflight_sealed = self.closing
        if events:
            self.last_append = now
        return writes

    def _writes(self, events: list[AnyEvent], *, replace: bool, level: int) -> list[ChunkWrite]:
        """The chunks of ``events`` after what is stored; a crash's loss is noted while the tail
        it precedes is still unwritten or being replaced."""
        return chunk_writes(
            self.session_id,
            events,
            after=self.durable,
            most=self.tail_max_events,
            level=level,
            replace=replace,
            sealed=self.closing,
            open_turn=self.open_turn,
            lost=self.tail_lost if replace or not self.tail else None,
        )

    def done(self, writes: list[ChunkWrite], applied: list[bool]) -> None:
        """Take the outcome of this log's writes (of one call)."""
        kind, self.inflight_kind = self.inflight_kind, None
        batch, self.inflight = self.inflight, []
        if not all(applied):
            self.state = "broken"
            self.taking = False
            self.pending = []
            self._owner().report_problem(
                "storage",
                f"another process has written this session's event log; events after {self.durable} "
                "are not logged here (open the session again)",
                once="event_log",
            )
            self._release_waiters()
            self._finish()
            return
        chunk = writes[-1].chunk
        self.durable = chunk.last_seq
        self.last_chunk = chunk
        self.last_sealed = self.inflight_sealed
        if kind != "seal":
            self.written_since_check += sum(len(w.chunk.data) for w in writes)
        if kind == "provisional":
            if not self.tail:
                self.tail_first = writes[0].chunk.first_seq
            self.tail.extend(batch)
            self.tail_bytes += sum(len(w.chunk.data) for w in writes)
            self.tail_chunks += len(writes)
        elif kind == "compact":
            self.tail, self.tail_first, self.tail_bytes, self.tail_chunks = [], None, 0, 0
            self.tail_lost = None
            self.turn_ended = any(isinstance(e, TurnCompleted) for e in self.pending)
            first = EventChunk(writes[0].chunk.first_seq, chunk.last_seq, b"")
            self.writer.maybe_trim(self, first)
        self.failing = False
        self._owner().forget_problem("event_log_write")
        self._release_waiters()
        if self.closing and not self.pending:
            if self.last_sealed:
                self._finish()

    def failed(self, exc: BaseException) -> None:
        """Put a batch whose write raised back in the queue (it is tried again), unless the log
        stopped meanwhile (then it is dropped: it is never written, and never read)."""
        if self.state != "open":
            self.inflight, self.inflight_kind = [], None
            return
        self.pending = [*self.inflight, *self.pending]
        self.inflight, self.inflight_kind = [], None
        self.failing = True
        self._owner().report_problem(
            "storage", f"writing this session's event log failed (retrying): {exc}", once="event_log_write"
        )

    # -- waiting ----------------------------------------------------------------------------------
    @property
    def stored(self) -> int | None:
        """The newest stored number, or None for a session not kept in storage (its events are
        never stored, so there is nothing to wait for). A log that stopped (broken, or closed
        before storing everything) keeps answering its stored end: what is above was not stored."""
        if not self._persisted():
            return None
        return self.durable

    async def durable_through(self, seq: int) -> None:
        """Wait until the event numbered ``seq`` is stored (at once when it is, or when the
        session is not kept in storage).

        :raises EventLogStopped: the log stopped (broken, or closed) without storing ``seq``,
            at once or while waiting: the event was not stored and this log will not store it.
        """
        if seq <= self.durable or not self._persisted():
            return
        if self.state == "open":
            future = self._waiters.add(seq)
            if not self.urgent:
                self.urgent = True
                self.writer.wake(self)
            await future
            if seq <= self.durable or not self._persisted():
                return
        from hermes_core.errors import EventLogStopped

        raise EventLogStopped(self.session_id, seq, self.durable)

    def _release_waiters(self) -> None:
        if self._waiters.release(self.durable, self.state != "open"):
            self.urgent = True  # someone still waits: the next write goes at once

    # -- closing ----------------------------------------------------------------------------------
    async def close(self, timeout: float) -> None:
        """Write what is queued and seal the log; give up (logging it) after ``timeout``."""
        if self.state != "open":
            return
        self.closing = True
        self.taking = False
        if self._closed is None:
            self._closed = asyncio.get_running_loop().create_future()
        self.writer.wake(self)
        try:
            # With storage away, closing the session does not wait for it: the log stays
            # unsealed, and the next opener continues right after what it stored.
            if not await within(self._closed, 0 if self.failing else timeout):
                log.warning("the event log of %s was closed without being sealed", self.session_id)
        finally:
            # Timed out, failed or cancelled: the log stops here. Nothing more is written (a
            # write already in flight may still land), and whoever waits for a number it did
            # not store is told so (``EventLogStopped``), never that it was stored.
            if self.state == "open":
                self.state = "closed"
                self.taking = False
                self._release_waiters()

    def _finish(self) -> None:
        self.taking = False
        if self.state == "open":
            self.state = "closed"
        self._release_waiters()
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)


class _Gone:
    """Where a log's reports go once its session is gone: nowhere."""

    def report_problem(self, code: str, message: str, *, once: str | None = None) -> None:
        pass

    def forget_problem(self, once: str) -> None:
        pass


_GONE = _Gone()
