"""Picking up a session's log when the session opens, after a clean close or a crash
(docs/reference/core.md#after-a-crash).

A sealed log continues at its next number. A log whose newest chunk is not sealed was left by a
process that died: numbering continues above that chunk's reservation, which is the chunk's own
last number (the writer shows only stored events, so the dead process showed nothing above it
and the cut-off turn's end comes right after the last stored event, no gap); a reservation
above it (a log an older writer left) makes the numbers between a ``lost`` gap. A turn the
chunk notes as running gets its terminal event now, a ``TurnCompleted`` with outcome
``interrupted`` / ``interrupted_by_system`` carrying what the log holds of its text and usage,
so no reader waits for an end that will never come.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes_core.event_log.codec import RESERVE, ChunkHeader, decode_events, split_chunk
from hermes_core.event_log.store import EventChunk, EventLogStore
from hermes_core.events import (
    AnyEvent,
    ReasoningDelta,
    SegmentStarted,
    TextDelta,
    TurnCompleted,
    TurnOutcome,
    TurnStarted,
    Usage,
    UsageUpdated,
)

INTERRUPTED_MESSAGE = (
    "The Hermes process running this turn ended before the turn completed; "
    "the turn was closed when the session was opened again."
)
#: How many chunks of a cut-off turn are read to recover its text (a turn's provisional chunks).
TURN_CHUNKS = 256


@dataclass(frozen=True, slots=True)
class Resumption:
    """Where a reopened log continues.

    :ivar next_seq: the number of the next event.
    :ivar lost: numbers a crash may have handed out and not stored, or None.
    :ivar terminal: the ``TurnCompleted`` to append for a turn the crash cut off, or None.
    """

    next_seq: int
    lost: tuple[int, int] | None = None
    terminal: TurnCompleted | None = None


async def resume(store: EventLogStore, session_id: str, last: EventChunk | None) -> Resumption:
    """Decide how a session's log continues from its newest stored chunk."""
    if last is None:
        return Resumption(1)
    try:
        header, _ = split_chunk(last.data)
    except ValueError:
        # A chunk this version cannot read (written by a newer one, or damaged): continue above
        # anything it could have reserved, and say nothing about a turn it may note.
        header = ChunkHeader(reserve=last.last_seq + RESERVE)
    if header.sealed:
        return Resumption(last.last_seq + 1)
    next_seq = max(header.reserve, last.last_seq) + 1
    lost = (last.last_seq + 1, next_seq - 1) if next_seq - 1 > last.last_seq else None
    terminal = None
    if header.open_turn is not None:
        terminal = await _cut_off(store, session_id, header)
    return Resumption(next_seq, lost, terminal)


async def _cut_off(store: EventLogStore, session_id: str, header: ChunkHeader) -> TurnCompleted:
    """Build the terminal event of the turn ``header`` notes as running."""
    assert header.open_turn is not None
    turn_id, started = header.open_turn
    events: list[AnyEvent] = []
    for chunk in await store.read_event_chunks(session_id, after=started - 1, limit=TURN_CHUNKS):
        try:
            _, body = split_chunk(chunk.data)
            events.extend(decode_events(body, session_id, chunk.first_seq))
        except (ValueError, KeyError, TypeError):
            continue  # what cannot be read is not recovered; the terminal event is still due
    mine = [e for e in events if e.turn_id == turn_id]
    segment: str | None = None
    text: list[str] = []
    reasoning: list[str] = []
    usage = turn_usage = Usage()
    user_row_id = None
    for event in mine:
        if isinstance(event, TurnStarted):
            user_row_id = event.user_row_id
        elif isinstance(event, SegmentStarted):
            segment, text, reasoning = event.segment_id, [], []
        elif isinstance(event, TextDelta | ReasoningDelta):
            if segment is None:
                segment = event.segment_id  # its SegmentStarted was dropped by retention
            if event.segment_id == segment:
                (text if isinstance(event, TextDelta) else reasoning).append(event.text)
        elif isinstance(event, UsageUpdated):
            usage, turn_usage = event.usage, event.turn_usage
    said = "".join(text)
    return TurnCompleted(
        session_id=session_id,
        turn_id=turn_id,
        outcome=TurnOutcome(
            status="interrupted",
            reason="interrupted_by_system",
            partial=bool(said),
            message=INTERRUPTED_MESSAGE,
        ),
        text=said,
        reasoning="".join(reasoning),
        usage=usage,
        turn_usage=turn_usage,
        user_row_id=user_row_id,
    )
