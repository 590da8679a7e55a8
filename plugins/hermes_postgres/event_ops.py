"""Sessions' event logs in ``hermes_event_chunks`` (docs/plugin-hooks.md#the-event-log).

A write takes a transaction-scoped advisory lock per session (so two writers of one log queue
up instead of both reading the same end), checks the writer lease when this storage holds it (a
former holder's writes are refused, as its row writes are), compares the log's end and writes.
All writes of one call are one statement, so one transaction: a call of the server-side
function of :mod:`hermes_postgres.event_sql`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_core import ChunkInfo, ChunkWrite, EventChunk
from hermes_postgres import inline
from hermes_postgres.event_sql import LOG_LOCK_CLASS, WRITE_CHUNKS_TYPES, write_chunks_sql

_END = "SELECT last_seq FROM hermes_event_chunks WHERE session_id = %s ORDER BY last_seq DESC LIMIT 1"
Fence = tuple[str, int] | None


async def _end(cur: Any, session_id: str) -> int:
    await cur.execute(_END, (session_id,))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def write_all(cur: Any, items: Sequence[ChunkWrite], fences: Sequence[Fence]) -> list[bool]:
    """Apply the writes in one statement (autocommit: one transaction); one answer per write,
    False when its condition failed or its lease moved.

    :raises psycopg.Error: for a chunk that does not follow the log's end (nothing is kept).
    """
    arrays, params = inline.arrays(
        WRITE_CHUNKS_TYPES,
        (
            [item.session_id for item in items],
            [item.after for item in items],
            [item.replace_from for item in items],
            [item.chunk.first_seq for item in items],
            [item.chunk.last_seq for item in items],
            [bytes(item.chunk.data) for item in items],
            [None if fence is None else fence[0] for fence in fences],
            [None if fence is None else fence[1] for fence in fences],
        ),
    )
    await cur.execute(write_chunks_sql(arrays), params)
    row = await cur.fetchone()
    return [bool(done) for done in row[0]]


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
