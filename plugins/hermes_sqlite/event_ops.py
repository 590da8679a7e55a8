"""Sessions' event logs in the ``event_chunks`` table (docs/plugin-hooks.md#the-event-log).

Every function here runs as a job of the database thread (on it, or inline on the loop) with its
connection. A chunk's numbers only grow within a session, so the index on ``(session_id,
last_seq)`` orders chunks and finds the log's end; the compare-and-set of a write reads that end
inside the write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hermes_core import ChunkInfo, ChunkWrite, EventChunk, StorageError, storage_kit
from hermes_sqlite.schema import write_transaction

_END = "SELECT last_seq FROM event_chunks WHERE session_id = ? ORDER BY last_seq DESC LIMIT 1"


def _end(conn: sqlite3.Connection, session_id: str) -> int:
    row = conn.execute(_END, (session_id,)).fetchone()
    return int(row[0]) if row else 0


def write(conn: sqlite3.Connection, writes: Sequence[ChunkWrite]) -> list[bool]:
    """Apply each write whose condition holds, in one transaction (``write_event_chunks``)."""
    storage_kit.check_chunk_writes(writes)
    results = []
    with write_transaction(conn):
        for item in writes:
            if _end(conn, item.session_id) != item.after:
                results.append(False)
                continue
            if item.replace_from is not None:
                conn.execute(
                    "DELETE FROM event_chunks WHERE session_id = ? AND last_seq >= ? AND first_seq >= ?",
                    (item.session_id, item.replace_from, item.replace_from),
                )
            chunk = item.chunk
            below = _end(conn, item.session_id)
            if chunk.first_seq <= below:
                # Raising rolls the whole transaction back: no write of this call lands.
                raise StorageError(
                    f"event log write for session {item.session_id} refused: first_seq "
                    f"{chunk.first_seq} does not follow {below}"
                )
            conn.execute(
                "INSERT INTO event_chunks (session_id, first_seq, last_seq, data) VALUES (?, ?, ?, ?)",
                (item.session_id, chunk.first_seq, chunk.last_seq, bytes(chunk.data)),
            )
            results.append(True)
    return results


def read(conn: sqlite3.Connection, session_id: str, after: int, limit: int) -> list[EventChunk]:
    """Return up to ``limit`` chunks with ``last_seq > after``, oldest first."""
    rows = conn.execute(
        "SELECT first_seq, last_seq, data FROM event_chunks WHERE session_id = ? AND last_seq > ? "
        "ORDER BY last_seq LIMIT ?",
        (session_id, after, limit),
    ).fetchall()
    return [EventChunk(int(r[0]), int(r[1]), bytes(r[2])) for r in rows]


def last(conn: sqlite3.Connection, session_id: str) -> EventChunk | None:
    """Return the newest chunk."""
    row = conn.execute(
        "SELECT first_seq, last_seq, data FROM event_chunks WHERE session_id = ? "
        "ORDER BY last_seq DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return EventChunk(int(row[0]), int(row[1]), bytes(row[2])) if row else None


def index(conn: sqlite3.Connection, session_id: str) -> list[ChunkInfo]:
    """Return every chunk's numbers and size, oldest first."""
    rows = conn.execute(
        "SELECT first_seq, last_seq, length(data) FROM event_chunks WHERE session_id = ? ORDER BY last_seq",
        (session_id,),
    ).fetchall()
    return [ChunkInfo(int(r[0]), int(r[1]), int(r[2])) for r in rows]


def trim(conn: sqlite3.Connection, session_id: str, before: int) -> int:
    """Delete the chunks with ``last_seq < before`` except the newest."""
    with write_transaction(conn):
        end = _end(conn, session_id)
        cur = conn.execute(
            "DELETE FROM event_chunks WHERE session_id = ? AND last_seq < ? AND last_seq < ?",
            (session_id, before, end),
        )
        return int(cur.rowcount)
