"""The chunk writes a session's log makes (docs/reference/core.md#the-event-log): how its
events are cut into chunks and what each chunk's header notes.

:class:`~hermes_core.event_log.writer.SessionLog` decides *when* to write; this module says
*what* each write holds. Chunks come in two kinds. A *provisional* chunk holds what was queued
since the last write; the events of the open tail (everything since the last compaction) stay in
memory meanwhile. A *compaction* rewrites the open tail as compressed chunks of at most
``tail_max_events`` events, replacing the provisional ones, so retention can still drop part of
a log. The final chunk written at close is marked *sealed* (a log closed with nothing left to
write gets its newest chunk rewritten sealed): a log whose newest chunk is not sealed was not
closed, its writer died.

A number is final only once stored: transports show an event to a client only after
``kernel.events.durable`` says it is stored (the TUI gateway holds its frames for the batch that
stores them, the API for its runs and responses). So every chunk notes its own last number as
its reservation (the newest number its writer may have shown), and a writer that finds an
unsealed log after a crash continues right after it: no gap where nothing was shown. A log an
older writer left with a reservation above its end (it showed numbers before storing them)
still continues above that reservation, those numbers being a ``lost`` gap.
"""

from __future__ import annotations

from hermes_core.event_log.codec import ChunkHeader, encode_events, make_chunk, split_chunk
from hermes_core.event_log.store import ChunkWrite, EventChunk
from hermes_core.events import AnyEvent

#: zlib levels: provisional chunks are rewritten soon, compactions stay.
PROVISIONAL_LEVEL = 1
COMPACT_LEVEL = 6


def chunk_writes(
    session_id: str,
    events: list[AnyEvent],
    *,
    after: int,
    most: int,
    level: int,
    replace: bool,
    sealed: bool,
    open_turn: tuple[str, int] | None,
    lost: tuple[int, int] | None,
) -> list[ChunkWrite]:
    """The chunks of ``events`` (numbered, at least one; at most ``most`` a chunk), each
    following the last, the first following ``after`` (the log's stored end).

    Only the newest chunk's header is ever read back (at the next open), so ``sealed`` and
    ``open_turn`` are noted on the last chunk; ``lost`` (numbers a crash lost just before the
    events) on the first. With ``replace``, the first chunk replaces the stored ones from its
    first number on (a compaction of the open tail).
    """
    size = min(len(events), most)
    writes: list[ChunkWrite] = []
    for at in range(0, len(events), size):
        piece = events[at : at + size]
        first, last = piece[0].seq, piece[-1].seq
        final = at + size >= len(events)
        header = ChunkHeader(
            reserve=last,  # nothing above it was shown (see the module's docstring)
            sealed=sealed and final,
            open_turn=open_turn if final else None,
            lost=lost if at == 0 else None,
        )
        chunk = make_chunk(first, last, header, encode_events(piece, level=level))
        replace_from = first if replace and at == 0 else None
        writes.append(ChunkWrite(session_id, chunk, after=after, replace_from=replace_from))
        after = last
    return writes


def seal_write(session_id: str, last: EventChunk, after: int) -> ChunkWrite:
    """The write that replaces ``last`` (the log's newest chunk, stored through ``after``) by
    the same chunk marked sealed: how a log with nothing left to write is closed."""
    header, body = split_chunk(last.data)
    sealed = ChunkHeader(header.reserve, True, header.open_turn, header.lost)
    chunk = make_chunk(last.first_seq, last.last_seq, sealed, body)
    return ChunkWrite(session_id, chunk, after=after, replace_from=last.first_seq)


def is_sealed(chunk: EventChunk) -> bool:
    """Whether ``chunk`` is marked sealed (one that cannot be read counts as sealed: it is never
    rewritten, and the next write starts above its reservation)."""
    try:
        return split_chunk(chunk.data)[0].sealed
    except ValueError:
        return True
