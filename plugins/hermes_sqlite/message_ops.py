"""Message rows: append, load, soft-archive and meta updates (agent-core §7.4, §7.5).

Every function here runs on the database thread with its connection. Rows are never deleted;
archiving sets ``active = 0`` and ``archived_reason``.
"""

from __future__ import annotations

import operator
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_core import NewRow, Row, SessionNotFound, StorageError
from hermes_sqlite.activity import ActivityStamps
from hermes_sqlite.codec import dump_json, load_mapping
from hermes_sqlite.row_cache import RowCache
from hermes_sqlite.row_codec import (
    LOAD_COLUMNS,
    MESSAGE_COLUMNS,
    STATE_COLUMNS,
    row_params,
    rows_from_values,
    rows_with_state_from_values,
)
from hermes_sqlite.schema import write_transaction

_INSERT = (
    f"INSERT INTO messages ({', '.join(MESSAGE_COLUMNS)}) VALUES ({', '.join('?' * len(MESSAGE_COLUMNS))})"
)
_NEXT_ID = (
    "SELECT max(ifnull((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0), "
    "ifnull((SELECT max(id) FROM messages), 0)) + 1"
)
TOUCH_SESSION = "UPDATE sessions SET updated_at = ? WHERE id = ? AND placeholder = 0"
_LOAD_ACTIVE = (
    f"SELECT {', '.join(LOAD_COLUMNS)} FROM messages WHERE session_id = ? AND active = 1 "
    "ORDER BY position, id"
)
_LOAD_ALL = (
    f"SELECT {', '.join(LOAD_COLUMNS + STATE_COLUMNS)} FROM messages WHERE session_id = ? "
    "ORDER BY position, id"
)
# Picks the LOAD_COLUMNS values out of INSERT parameters.
_as_loaded = operator.itemgetter(*(MESSAGE_COLUMNS.index(c) for c in LOAD_COLUMNS))
# A fixed number of placeholders keeps one prepared statement for every chunk; short chunks
# repeat their last id, which IN ignores.
_ARCHIVE_CHUNK = 100
_ARCHIVE = (
    "UPDATE messages SET archived_reason = CASE WHEN active = 1 THEN ? ELSE archived_reason END, "
    f"active = 0 WHERE session_id = ? AND id IN ({', '.join('?' * _ARCHIVE_CHUNK)})"
)


def insert_rows(
    conn: sqlite3.Connection, session_id: str, rows: Sequence[NewRow], now: float
) -> list[tuple[Any, ...]]:
    """Insert rows with ids chosen here, inside the caller's write transaction.

    Choosing the ids up front (the write lock is held, so nobody else inserts) lets the
    position default and the placeholder tool-call ids be written by the INSERT itself.

    :param conn: the connection, inside a write transaction.
    :param session_id: the owning session.
    :param rows: the rows.
    :param now: the creation time of rows that name none.
    :returns: the inserted values, in :data:`MESSAGE_COLUMNS` order; the id comes first.
    """
    first = conn.execute(_NEXT_ID).fetchone()[0]
    params = [row_params(row, first + offset, session_id, now) for offset, row in enumerate(rows)]
    if len(params) == 1:
        conn.execute(_INSERT, params[0])
    else:
        conn.executemany(_INSERT, params)
    return params


def inserted_rows(session_id: str, inserted: list[tuple[Any, ...]]) -> list[Row]:
    """Turn values returned by :func:`insert_rows` into rows, as a load would return them.

    :param session_id: the owning session.
    :param inserted: the inserted values.
    :returns: the rows.
    """
    return rows_from_values(map(_as_loaded, inserted), session_id)


def append_rows(
    conn: sqlite3.Connection,
    cache: RowCache,
    stamps: ActivityStamps,
    session_id: str,
    rows: Sequence[NewRow],
) -> list[int]:
    """Append rows to a session in one transaction and bump its ``updated_at`` when due.

    :param conn: the connection.
    :param cache: the row cache to keep in step.
    :param stamps: when this connection last bumped each session (see ``activity``).
    :param session_id: a stored session.
    :param rows: the rows.
    :returns: their ids, in order.
    :raises SessionNotFound: when the session is not stored.
    """
    if not rows:
        return []
    now = time.time()
    with write_transaction(conn):
        # Without a bump the session is known to exist: this connection bumped it (so it was a
        # real session, not a lease placeholder) and sessions are never deleted.
        bump = stamps.bump_due(conn, session_id, now)
        if bump and conn.execute(TOUCH_SESSION, (now, session_id)).rowcount != 1:
            raise SessionNotFound(session_id)
        inserted = insert_rows(conn, session_id, rows, now)
    if bump:
        stamps.bumped(session_id, now)
    if cache.has(session_id):
        cache.extend(session_id, inserted_rows(session_id, inserted))
    return [values[0] for values in inserted]


def load_rows(
    conn: sqlite3.Connection, cache: RowCache, session_id: str, include_archived: bool
) -> list[Row]:
    """Return a session's rows ordered by ``(position, id)``; active rows go through the cache.

    :param conn: the connection.
    :param cache: the row cache.
    :param session_id: the session id.
    :param include_archived: also return soft-archived rows.
    :returns: the rows, empty for an unknown session.
    """
    if include_archived:
        return rows_with_state_from_values(conn.execute(_LOAD_ALL, (session_id,)), session_id)
    cache.sync(conn)
    rows = cache.get(session_id)
    if rows is None:
        rows = rows_from_values(conn.execute(_LOAD_ACTIVE, (session_id,)), session_id)
        cache.put(session_id, rows)
        rows = list(rows)  # the cache keeps the first list
    return rows


def archive_rows(
    conn: sqlite3.Connection, session_id: str, row_ids: Sequence[int], reason: str | None
) -> None:
    """Soft-archive rows of one session inside the caller's transaction.

    Rows already archived keep their first reason.

    :param conn: the connection, inside a write transaction.
    :param session_id: the session the rows must belong to.
    :param row_ids: the rows.
    :param reason: the archive reason.
    :raises StorageError: when an id is not a row of this session (nothing is archived then).
    """
    ids = list(dict.fromkeys(row_ids))
    touched = 0
    for start in range(0, len(ids), _ARCHIVE_CHUNK):
        chunk = ids[start : start + _ARCHIVE_CHUNK]
        chunk += [chunk[-1]] * (_ARCHIVE_CHUNK - len(chunk))
        touched += conn.execute(_ARCHIVE, (reason, session_id, *chunk)).rowcount
    if touched != len(ids):
        raise StorageError(f"cannot archive rows: some of them are not rows of session {session_id}")


def update_row_meta(conn: sqlite3.Connection, cache: RowCache, row_id: int, meta: Mapping[str, Any]) -> None:
    """Merge keys into one row's ``meta`` JSON.

    :param conn: the connection.
    :param cache: the row cache to keep in step.
    :param row_id: the row.
    :param meta: keys to set.
    :raises StorageError: when there is no such row.
    """
    with write_transaction(conn):
        found = conn.execute("SELECT session_id, meta FROM messages WHERE id = ?", (row_id,)).fetchone()
        if found is None:
            raise StorageError(f"no message row with id {row_id}")
        merged = load_mapping(found[1])
        merged.update(meta)
        conn.execute(
            "UPDATE messages SET meta = ? WHERE id = ?", (dump_json(merged) if merged else None, row_id)
        )
    cache.forget(found[0])
