"""The event log's backend contract (docs/plugin-hooks.md#the-event-log).

A session's log is a sequence of chunks. Each chunk holds the events numbered ``first_seq`` to
``last_seq`` (consecutive numbers) as bytes only the kernel reads; the backend stores, orders,
reads and drops chunks, and guards the log's end with a compare-and-set so that two writers can
never interleave. Numbers may jump between chunks (events lost in a crash); they never go back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class EventChunk:
    """Events ``first_seq``..``last_seq`` of one session's log, encoded by the kernel.

    :ivar first_seq: the number of the first event (at least 1).
    :ivar last_seq: the number of the last one (at least ``first_seq``).
    :ivar data: the events; opaque to the backend, stored and returned byte for byte.
    """

    first_seq: int
    last_seq: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ChunkInfo:
    """What a backend knows of a stored chunk without reading its data."""

    first_seq: int
    last_seq: int
    size: int  # len(data)


@dataclass(frozen=True, slots=True)
class ChunkWrite:
    """One chunk to add to one session's log, on a condition.

    The write happens only when the log's last seq (0 for an empty log) equals ``after``. With
    ``replace_from`` the chunks whose ``first_seq`` is at least ``replace_from`` are deleted
    first (the kernel rewrites the newest chunks as one). Afterwards ``chunk.first_seq`` must be
    above the last seq of the chunks that remain, and ``chunk.last_seq`` at least ``after``.
    """

    session_id: str
    chunk: EventChunk
    after: int
    replace_from: int | None = None


@runtime_checkable
class EventLogStore(Protocol):
    """The event-log part of a storage backend."""

    async def write_event_chunks(self, writes: Sequence[ChunkWrite]) -> list[bool]:
        """Apply each write whose condition holds, all in one transaction.

        :returns: per write, True when applied, False when its condition failed (that log has
            another end: someone else wrote it) or the backend fences the session's writes and
            this process no longer holds its lease. A failed write changes nothing.
        :raises StorageError: a write that breaks the shape rules (nothing at all is written).
        """
        ...

    async def read_event_chunks(self, session_id: str, *, after: int, limit: int) -> list[EventChunk]:
        """Return up to ``limit`` chunks whose ``last_seq`` is above ``after``, oldest first."""
        ...

    async def last_event_chunk(self, session_id: str) -> EventChunk | None:
        """Return the session's newest chunk, or None for an empty log."""
        ...

    async def event_log_index(self, session_id: str) -> list[ChunkInfo]:
        """Return every chunk's numbers and size, oldest first (for retention)."""
        ...

    async def trim_event_log(self, session_id: str, *, before: int) -> int:
        """Delete the chunks whose ``last_seq`` is below ``before``, never the newest chunk;
        return how many were deleted."""
        ...


EVENT_LOG_METHODS = (
    "write_event_chunks",
    "read_event_chunks",
    "last_event_chunk",
    "event_log_index",
    "trim_event_log",
)


def missing_event_log_methods(storage: object) -> list[str]:
    """Return the :class:`EventLogStore` methods ``storage`` lacks (empty: it has them all)."""
    return [name for name in EVENT_LOG_METHODS if not callable(getattr(storage, name, None))]


def check_writes(writes: Sequence[ChunkWrite]) -> None:
    """Check the shape rules a backend can check without its data (first of all, in the call).

    :raises StorageError: naming the first write that breaks one.
    """
    from hermes_core.errors import StorageError

    for write in writes:
        chunk = write.chunk
        problem = None
        if not isinstance(chunk.data, bytes | bytearray):
            problem = "data must be bytes"
        elif chunk.first_seq < 1 or chunk.last_seq < chunk.first_seq:
            problem = f"bad numbers {chunk.first_seq}..{chunk.last_seq}"
        elif write.after < 0 or chunk.last_seq < write.after:
            problem = f"last_seq {chunk.last_seq} is below the log's end {write.after}"
        elif write.replace_from is None and chunk.first_seq <= write.after:
            problem = f"first_seq {chunk.first_seq} does not follow the log's end {write.after}"
        elif write.replace_from is not None and chunk.first_seq < write.replace_from:
            problem = f"first_seq {chunk.first_seq} is below replace_from {write.replace_from}"
        if problem is not None:
            raise StorageError(f"event log write for session {write.session_id} refused: {problem}")
