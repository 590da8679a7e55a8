"""Reading the event log from a cursor (docs/reference/core.md#reading-the-log).

A read returns the events numbered above the cursor, in order, and says where numbers are
missing: :class:`LogGap` with the reason ``retention`` (older chunks were dropped), ``lost``
(events a crashed process had handed out before they were stored) or ``unreadable`` (a chunk
this version cannot decode). A cursor that is not a number, is negative, or lies ahead of
the log is a :class:`~hermes_core.errors.CursorError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hermes_core.errors import CursorError
from hermes_core.event_log.codec import ChunkHeader, decode_events, split_chunk
from hermes_core.events import AnyEvent

if TYPE_CHECKING:
    from hermes_core.event_log.store import EventChunk, EventLogStore
    from hermes_core.event_log.writer import SessionLog

#: The largest cursor (and seq) the log uses: a signed 64-bit integer.
MAX_SEQ = 2**63 - 1
MAX_PAGE = 10_000
CHUNKS_PER_READ = 64

GapReason = Literal["retention", "lost", "unreadable"]


@dataclass(frozen=True, slots=True)
class LogGap:
    """Numbers ``first_seq``..``last_seq`` of the log that a read cannot give, and why."""

    first_seq: int
    last_seq: int
    reason: GapReason


@dataclass(frozen=True, slots=True)
class LogPage:
    """One read: the events after the cursor and the gaps between them, in order.

    :ivar items: events (each with its ``seq``) and gaps.
    :ivar head: the newest number the log knows (handed out, for a session live here).
    :ivar durable: the newest number stored.
    :ivar more: the page stopped at its limit; read again after :attr:`last_seq`. (A page of a
        session live here ends at the stored end without ``more``: the events the log has yet
        to store are not read, see :meth:`~hermes_core.event_log.owner.EventLogs.read`.)
    """

    items: list[AnyEvent | LogGap]
    head: int
    durable: int
    more: bool
    after: int

    @property
    def last_seq(self) -> int:
        """The number to read after next: the last item's, or the cursor when there is none."""
        if not self.items:
            return self.after
        last = self.items[-1]
        return last.last_seq if isinstance(last, LogGap) else last.seq


def parse_cursor(value: object) -> int:
    """Return a cursor as a number: an int, or decimal digits as text (a ``Last-Event-ID``).

    :raises CursorError: ``not_a_number`` or ``negative`` (both say what a cursor is).
    """
    if isinstance(value, bool):
        raise CursorError("not_a_number", "a cursor is a whole number (the seq of the last event seen)")
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text.startswith("-") else text
        if not digits.isascii() or not digits.isdigit() or len(digits) > 19:
            raise CursorError(
                "not_a_number",
                f"a cursor is a whole number (the seq of the last event seen), not {value[:40]!r}",
            )
        value = int(text)
    if not isinstance(value, int):
        raise CursorError("not_a_number", "a cursor is a whole number (the seq of the last event seen)")
    if value < 0:
        raise CursorError("negative", f"a cursor is 0 or more, not {value}")
    if value > MAX_SEQ:
        raise CursorError("ahead", f"cursor {value} is beyond any event number", head=None)
    return value


def check_limit(limit: object) -> int:
    """Return a page size in 1..``MAX_PAGE``."""
    from hermes_core.errors import InvalidValue

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidValue("limit", message=f"limit must be an integer from 1 to {MAX_PAGE}")
    return limit


def stored_head(last: EventChunk | None) -> int:
    """The newest number a stored log may have handed out: its end, or the reservation of a log
    whose writer died (numbers up to it may have reached a client)."""
    if last is None:
        return 0
    header, _ = split_chunk(last.data)
    return last.last_seq if header.sealed else max(last.last_seq, header.reserve)


def _gaps(first: int, last: int, header: ChunkHeader | None) -> list[LogGap]:
    """The gap ``first..last`` before a chunk, split where its header notes a crash's loss."""
    if first > last:
        return []
    lost = header.lost if header is not None else None
    if lost is None or lost[1] < first:
        return [LogGap(first, last, "retention")]
    out = []
    if first < lost[0]:
        out.append(LogGap(first, lost[0] - 1, "retention"))
    out.append(LogGap(max(first, lost[0]), last, "lost"))
    return out


async def read_page(
    store: EventLogStore,
    session_id: str,
    after: int,
    limit: int,
    live: SessionLog | None,
    redact: Callable[[str], str] | None,
) -> LogPage:
    """Read the events after ``after`` (see :func:`hermes_core.event_log.owner.EventLogs.read`)."""
    memory: Sequence[AnyEvent] = live.memory() if live is not None else ()
    upto = MAX_SEQ
    if live is not None:
        head, durable = live.head, live.durable
        if after > head:
            raise CursorError(
                "ahead", f"cursor {after} is ahead of this session's log (last event {head})", head
            )
        # Only what is stored: a number above it may be handed out again after a crash (also
        # when the log stopped: what it did not store, it never will). A session not kept in
        # storage stores nothing: all there is.
        stored = live.stored
        upto = head if stored is None else stored
        if memory and after >= memory[0].seq - 1:
            return _from_memory(memory, after, limit, head, durable, live, upto)
        chunks = await store.read_event_chunks(session_id, after=after, limit=CHUNKS_PER_READ)
    else:
        reading = asyncio.ensure_future(
            store.read_event_chunks(session_id, after=after, limit=CHUNKS_PER_READ)
        )
        last = await store.last_event_chunk(session_id)
        chunks = await reading
        durable = last.last_seq if last is not None else 0
        head = stored_head(last)
        if after > head:
            raise CursorError(
                "ahead", f"cursor {after} is ahead of this session's log (last event {head})", head
            )
    items: list[AnyEvent | LogGap] = []
    cursor = after
    count = 0
    for chunk in chunks:
        if chunk.first_seq > upto:
            return LogPage(items, head, durable, False, after)
        try:
            header, body = split_chunk(chunk.data)
            events = decode_events(body, session_id, chunk.first_seq, redact)
        except (ValueError, KeyError, TypeError) as exc:
            del exc
            header, events = None, []
            if chunk.last_seq > cursor:
                items.extend(_gaps(cursor + 1, chunk.first_seq - 1, None))
                items.append(LogGap(max(cursor + 1, chunk.first_seq), chunk.last_seq, "unreadable"))
                cursor = chunk.last_seq
            continue
        if chunk.first_seq > cursor + 1:
            items.extend(_gaps(cursor + 1, chunk.first_seq - 1, header))
            cursor = chunk.first_seq - 1
        for event in events:
            if event.seq <= cursor:
                continue
            if event.seq > upto:
                return LogPage(items, head, durable, False, after)
            if count >= limit:
                return LogPage(items, head, durable, True, after)
            items.append(event)
            cursor = event.seq
            count += 1
    if len(chunks) >= CHUNKS_PER_READ:
        return LogPage(items, head, durable, cursor < min(head, upto), after)
    for event in memory:
        if event.seq <= cursor:
            continue
        if event.seq > upto:
            break
        if count >= limit:
            return LogPage(items, head, durable, True, after)
        if event.seq > cursor + 1 and live is not None:
            items.extend(_gaps(cursor + 1, event.seq - 1, ChunkHeader(0, lost=live.tail_lost)))
        items.append(event)
        cursor = event.seq
        count += 1
    return LogPage(items, head, durable, False, after)


def _from_memory(
    memory: Sequence[AnyEvent], after: int, limit: int, head: int, durable: int, live: SessionLog, upto: int
) -> LogPage:
    items: list[AnyEvent | LogGap] = []
    cursor = after
    for event in memory:
        if event.seq <= cursor:
            continue
        if event.seq > upto:
            break
        if len(items) >= limit:
            return LogPage(items, head, durable, True, after)
        if event.seq > cursor + 1:
            items.extend(_gaps(cursor + 1, event.seq - 1, ChunkHeader(0, lost=live.tail_lost)))
        items.append(event)
        cursor = event.seq
    return LogPage(items, head, durable, False, after)
