"""Sessions' event logs in ``hermes_event_chunks`` (docs/plugin-hooks.md#the-event-log).

A write takes a transaction-scoped advisory lock per session (so two writers of one log queue
up instead of both reading the same end), checks the writer lease when this storage holds it (a
former holder's writes are refused, as its row writes are), compares the log's end and writes.
All writes of one call are one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_core import ChunkInfo, ChunkWrite, EventChunk, StorageError

#: The first key of the two-key advisory locks on event logs ("HEVL"); the second is the hash
#: of the session id. Two-key locks never collide with the one-key migration lock.
LOG_LOCK_CLASS = 0x4845564C
_END = "SELECT last_seq FROM hermes_event_chunks WHERE session_id = %s ORDER BY last_seq DESC LIMIT 1"
Fence = tuple[str, int] | None


async def _end(cur: Any, session_id: str) -> int:
    await cur.execute(_END, (session_id,))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def write_one(cur: Any, item: ChunkWrite, fence: Fence) -> bool:
    """Apply one write inside the caller's transaction; False when its condition fails."""
    sid = item.session_id
    await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOG_LOCK_CLASS, sid))
    if fence is not None:
        await cur.execute(
            "SELECT 1 FROM hermes_leases WHERE session_id = %s AND owner = %s AND epoch = %s FOR SHARE",
            (sid, fence[0], fence[1]),
        )
        if await cur.fetchone() is None:
            return False  # the lease changed hands: this process no longer writes the session
    if await _end(cur, sid) != item.after:
        return False
    if item.replace_from is not None:
        await cur.execute(
            "DELETE FROM hermes_event_chunks WHERE session_id = %s AND last_seq >= %s AND first_seq >= %s",
            (sid, item.replace_from, item.replace_from),
        )
    below = await _end(cur, sid)
    chunk = item.chunk
    if chunk.first_seq <= below:
        raise StorageError(
            f"event log write for session {sid} refused: first_seq {chunk.first_seq} does not follow {below}"
        )
    await cur.execute(
        "INSERT INTO hermes_event_chunks (session_id, first_seq, last_seq, data) VALUES (%s, %s, %s, %s)",
        (sid, chunk.first_seq, chunk.last_seq, bytes(chunk.data)),
    )
    return True


async def read(cur: Any, session_id: str, after: int, limit: int) -> list[EventChunk]:
    """Return up to ``limit`` chunks with ``last_seq > after``, oldest first."""
    await cur.execute(
        "SELECT first_seq, last_seq, data FROM hermes_event_chunks WHERE session_id = %s AND last_seq > %s "
        "ORDER BY last_seq LIMIT %s",
        (session_id, after, limit),
    )
    return [EventChunk(int(r[0]), int(r[1]), bytes(r[2])) for r in await cur.fetchall()]


async def last(cur: Any, session_id: str) -> EventChunk | None:
    """Return the newest chunk."""
    await cur.execute(
        "SELECT first_seq, last_seq, data FROM hermes_event_chunks WHERE session_id = %s "
        "ORDER BY last_seq DESC LIMIT 1",
        (session_id,),
    )
    row = await cur.fetchone()
    return EventChunk(int(row[0]), int(row[1]), bytes(row[2])) if row else None


async def index(cur: Any, session_id: str) -> list[ChunkInfo]:
    """Return every chunk's numbers and size, oldest first."""
    await cur.execute(
        "SELECT first_seq, last_seq, octet_length(data) FROM hermes_event_chunks WHERE session_id = %s "
        "ORDER BY last_seq",
        (session_id,),
    )
    return [ChunkInfo(int(r[0]), int(r[1]), int(r[2])) for r in await cur.fetchall()]


async def trim(cur: Any, session_id: str, before: int) -> int:
    """Delete the chunks with ``last_seq < before`` except the newest (inside a transaction)."""
    await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOG_LOCK_CLASS, session_id))
    end = await _end(cur, session_id)
    await cur.execute(
        "DELETE FROM hermes_event_chunks WHERE session_id = %s AND last_seq < %s AND last_seq < %s",
        (session_id, before, end),
    )
    return int(cur.rowcount)


def check_all(writes: Sequence[ChunkWrite]) -> None:
    """Check the shape rules before anything is sent (see ``storage_kit.check_chunk_writes``)."""
    from hermes_core import storage_kit

    storage_kit.check_chunk_writes(writes)
