"""``kernel.events``: every session's durable event log (docs/reference/core.md#the-event-log).

The kernel numbers each event a live session emits (``Event.seq``, from 1, per session), keeps
it in the session's log through the storage backend, and answers reads from any cursor: the
events after it, gaps where the log cannot give them, and a clear error for a cursor that is
not one. Transports point their cursors here (replay after a reconnect or a restart).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from hermes_core.errors import StorageUnsupported
from hermes_core.event_log.store import EventLogStore, missing_event_log_methods

if TYPE_CHECKING:
    from hermes_core.event_log.reader import LogGap, LogPage
    from hermes_core.event_log.store import EventChunk
    from hermes_core.event_log.writer import SessionLog
    from hermes_core.event_log.writer_task import LogWriter
    from hermes_core.events import AnyEvent, TurnCompleted
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session

log = logging.getLogger("hermes.event_log")
#: How long closing a session waits for its log to be sealed (not at all while writes fail).
CLOSE_TIMEOUT_S = 3.0
#: How many closed sessions whose logs stopped short are remembered (see ``EventLogs.stored``).
STOPPED_KEPT = 4096


class EventLogs:
    """The kernel's owner of session event logs (``kernel.events``)."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._writer: LogWriter | None = None
        self._logs: dict[str, SessionLog] = {}
        # Sessions closed here whose log stopped before storing every number it handed out: the
        # stored end, so a transport still holding a later number is told, not waved through.
        self._stopped: dict[str, int] = {}
        self._why_off = "the kernel is not running"

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """Whether sessions' events are being logged (the setting, and a backend that can)."""
        return self._writer is not None

    @property
    def off_reason(self) -> str | None:
        """Why events are not logged, for a health report (None while they are)."""
        return None if self._writer is not None else self._why_off

    def start(self) -> None:
        """Decide whether to log and start the writer (``Kernel.running``, storage open); the
        writer is a kernel background task, cancelled at shutdown after the sessions closed."""
        from hermes_core.event_log.writer_task import LogWriter

        settings = self._kernel.settings
        storage = self._kernel.storage
        missing = missing_event_log_methods(storage)
        if not settings.event_log.enabled:
            self._why_off = "the event log is turned off (event_log.enabled = false)"
        elif settings.storage.read_only:
            self._why_off = "storage is open read-only (storage.read_only), so nothing is logged"
        elif missing:
            self._why_off = (
                f"storage backend {settings.storage.backend!r} has no event log (it lacks "
                f"{', '.join(missing)}); see docs/plugin-hooks.md#the-event-log"
            )
            log.warning("events are not logged: %s", self._why_off)
        else:
            self._writer = LogWriter(self._store(), self._check_retention)
            self._kernel.spawn(self._writer.run(), name="hermes-event-log")
            return
        self._writer = None

    def _store(self) -> EventLogStore:
        return self._kernel.storage  # type: ignore[return-value]

    def _need(self) -> EventLogStore:
        storage = self._kernel.storage  # StorageError when the kernel is not running
        missing = missing_event_log_methods(storage)
        if missing:
            raise StorageUnsupported(
                f"storage backend {self._kernel.settings.storage.backend!r} has no event log (it lacks "
                f"{', '.join(missing)}); see docs/plugin-hooks.md#the-event-log"
            )
        return self._store()

    # -- sessions opening and closing (the session table calls these) ---------------------------
    def read_last(self, session_id: str) -> asyncio.Future[EventChunk | None] | None:
        """Start reading a session's newest chunk (queued with the opener's other reads)."""
        if self._writer is None:
            return None
        return asyncio.ensure_future(self._store().last_event_chunk(session_id))

    async def attach(self, session: Session, last: EventChunk | None) -> None:
        """Give a just-opened session its log, closing a turn a crash cut off."""
        from hermes_core.event_log.recovery import resume
        from hermes_core.event_log.writer import TAIL_MAX_BYTES, TAIL_MAX_EVENTS, SessionLog

        writer = self._writer
        if writer is None:
            return
        resumed = await resume(self._store(), session.id, last)
        options = self._kernel.settings.event_log
        session_log = SessionLog(
            writer,
            session,
            resumed.next_seq,
            last,
            resumed.lost,
            tail_max_events=min(TAIL_MAX_EVENTS, max(1, options.max_events // 4)),
            tail_max_bytes=min(TAIL_MAX_BYTES, max(1, options.max_bytes // 4)),
        )
        self._logs[session.id] = session_log
        self._stopped.pop(session.id, None)  # numbers from here on are this log's
        session.attach_log(session_log)
        if resumed.terminal is not None:
            log.warning(
                "session %s: turn %s was cut off by the end of its process; logging it as interrupted",
                session.id,
                resumed.terminal.turn_id,
            )
            terminal = await _keep_cut_off_reply(session, resumed.terminal)
            session_log.append(terminal)
            session_log.urgent = True  # stored at once: readers wait for this end
            writer.wake(session_log)

    async def detach(self, session: Session) -> None:
        """Write and seal a closing session's log (before its lease is released).

        The close runs to its end (sealed, or given up after ``CLOSE_TIMEOUT_S``) even when the
        caller is cancelled, so the log is never left half-detached: until then it is read and
        waited on as a live log; after, what it did not store is remembered as not stored.
        """
        session_log = self._logs.get(session.id)
        if session_log is None or session_log.session is not session:
            return
        closing = asyncio.ensure_future(self._close(session_log))
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            closing.add_done_callback(_log_failure)  # nobody waits for it now
            raise

    async def _close(self, session_log: SessionLog) -> None:
        try:
            await session_log.close(CLOSE_TIMEOUT_S)
        finally:
            session_id = session_log.session_id
            if self._logs.get(session_id) is session_log:
                del self._logs[session_id]
                stored = session_log.stored
                if stored is not None and stored < session_log.head:
                    if len(self._stopped) >= STOPPED_KEPT:
                        del self._stopped[next(iter(self._stopped))]
                    self._stopped[session_id] = stored

    # -- reading --------------------------------------------------------------------------------
    async def read(self, session_id: str, *, after: int | str = 0, limit: int = 1000) -> LogPage:
        """Return the stored events numbered above ``after`` (at most ``limit``) and the gaps
        among them.

        Works for any stored session, live in this process or not (then from storage only). Of a
        session live here, only what its log has stored (:meth:`stored`): a number above it may
        be handed out again after a crash, so nothing derived from it may reach a client yet;
        the page then ends at the stored end (``more`` false, ``head`` above it), and
        :meth:`follow` or :meth:`durable` give the rest once stored.

        :param after: the cursor: the ``seq`` of the last event the reader has (0: from the
            start); an int or its decimal text (an SSE ``Last-Event-ID``).
        :param limit: 1..10,000 events.
        :raises CursorError: ``after`` is not a number, negative, or ahead of the log's head.
        :raises StorageUnsupported: nothing is logged (turned off, or the backend cannot).
        """
        from hermes_core.event_log.reader import check_limit, parse_cursor, read_page

        cursor = parse_cursor(after)
        size = check_limit(limit)
        store = self._need()
        live = self._logs.get(session_id)
        return await read_page(store, session_id, cursor, size, live, self._kernel.redactor)

    async def follow(self, session_id: str, *, after: int | str = 0) -> AsyncIterator[AnyEvent | LogGap]:
        """Yield the events after ``after`` and, while the session is live here, every later one.

        Replays from the log, then continues with the live events without a gap or a repeat
        (numbers decide); a live event is yielded once it is stored. Ends when the session
        closes, or after the replay when it is not live.

        :raises EventLogStopped: the log stopped before storing the next event to yield (its
            close timed out, storage refused its writes for too long, another process wrote it):
            everything stored was yielded, the rest never will be.
        """
        from hermes_core.event_log.reader import LogGap

        session = self._kernel.sessions.get(session_id)
        subscription = session.subscribe() if session is not None else None
        # In the same step as subscribing: numbers up to here come from reads, later ones from
        # the subscription; a read gives only stored events, so it waits for these first.
        known = (self.head(session_id) or 0) if subscription is not None else 0
        try:
            page = await self.read(session_id, after=after)
            cursor = page.after
            waited = False
            while True:
                for item in page.items:
                    yield item
                cursor = page.last_seq
                if not page.more:
                    if cursor >= known or waited:
                        break
                    waited = True
                    await self.durable(session_id, known)
                page = await self.read(session_id, after=cursor)
            if subscription is None:
                return
            async for event in subscription:
                if event.seq > cursor:
                    if event.seq > cursor + 1:
                        yield LogGap(cursor + 1, event.seq - 1, "lost")
                    cursor = event.seq
                    await self.durable(session_id, event.seq)  # shown only once stored
                    yield event
        finally:
            if subscription is not None:
                subscription.close()

    def head(self, session_id: str) -> int | None:
        """The newest number handed out in a session live here, or None when it is not."""
        session_log = self._logs.get(session_id)
        return session_log.head if session_log is not None else None

    def stored(self, session_id: str) -> int | None:
        """The newest stored number of a session live here (also once its log stopped: broken,
        or closing without storing everything), or of one closed here whose log stopped short
        of what it handed out; None when there is nothing to wait for (the session not kept in
        storage, or not live here with everything it numbered stored).

        A transport shows a numbered event only once it is stored (a number above it may be
        handed out again after a crash): when ``seq`` is above this, it awaits :meth:`durable`.
        """
        session_log = self._logs.get(session_id)
        if session_log is None:
            return self._stopped.get(session_id)
        return session_log.stored

    async def durable(self, session_id: str, seq: int) -> None:
        """Wait until event ``seq`` of a session live here is stored (at once when it is, or when
        the session is not kept in storage or not live here).

        :raises EventLogStopped: the log stopped without storing ``seq`` (at once, or while
            waiting): it was never stored, and its number may name another event later. Also
            for a session closed here whose log stopped below ``seq``.
        """
        session_log = self._logs.get(session_id)
        if session_log is not None:
            await session_log.durable_through(seq)
            return
        stopped = self._stopped.get(session_id)
        if stopped is not None and seq > stopped:
            from hermes_core.errors import EventLogStopped

            raise EventLogStopped(session_id, seq, stopped)

    async def flush(self) -> None:
        """Wait until every event queued so far is stored (tests, benchmarks, shutdown)."""
        if self._writer is not None:
            await self._writer.flush()

    # -- retention ------------------------------------------------------------------------------
    def _check_retention(self, session_log: SessionLog, chunk: EventChunk) -> None:
        # Checked when the numbers cross a multiple of max_events / 8 (wherever the session was
        # opened before: no read per open), or once max_bytes / 8 was written since the last check.
        options = self._kernel.settings.event_log
        step = max(1, options.max_events // 8)
        crossed = chunk.last_seq // step > (chunk.first_seq - 1) // step
        if not crossed and session_log.written_since_check < options.max_bytes // 8:
            return
        session_log.written_since_check = 0
        self._kernel.spawn(
            self._retain(session_log.session_id, session_log.tail_first), name="hermes-log-trim"
        )

    async def _retain(self, session_id: str, keep_from: int | None) -> None:
        from hermes_core.event_log.retention import cutoff

        options = self._kernel.settings.event_log
        store = self._store()
        try:
            index = await store.event_log_index(session_id)
            before = cutoff(index, options.max_events, options.max_bytes, keep_from)
            if before is not None:
                await store.trim_event_log(session_id, before=before)
        except Exception:
            log.warning("trimming the event log of %s failed", session_id, exc_info=True)


def _log_failure(task: asyncio.Future[None]) -> None:
    """Log a close that failed after its caller stopped waiting (cancelled)."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("closing an event log failed", exc_info=task.exception())


async def _keep_cut_off_reply(session: Session, terminal: TurnCompleted) -> TurnCompleted:
    """Store the text a crash cut off as the turn's reply row, marked cut off (as an interrupt
    does), so the transcript agrees with the log; return the terminal event naming that row.

    Nothing is stored when its reply row was already stored (the process died after storing it
    and before logging the end). A turn cut off before any text gets its user row marked instead
    (``meta["no_reply"]``), so a host redrawing the transcript from rows (ACP ``session/load``)
    shows that the turn ended, and why.
    """
    import dataclasses

    from hermes_core.storage import NewRow

    rows = session.rows
    if terminal.user_row_id is None or not rows:
        return terminal
    last = rows[-1]
    if last.id < terminal.user_row_id or (last.role == "assistant" and last.content):
        return terminal
    if not terminal.text:
        if last.id == terminal.user_row_id and last.role == "user":
            try:
                await session.mark_no_reply(last.id, "interrupted")
            except Exception:
                log.warning("session %s: could not mark the cut-off turn", session.id, exc_info=True)
        return terminal
    try:
        made = await session.append_rows(
            [NewRow(role="assistant", content=terminal.text, meta={"cut_off": "interrupted"})]
        )
    except Exception:
        log.warning("session %s: could not store the cut-off reply", session.id, exc_info=True)
        return terminal
    return dataclasses.replace(terminal, assistant_row_id=made[0].id)
