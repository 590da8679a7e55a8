"""Message rows: append, load, soft-archive and meta updates
(docs/reference/core.md#messages-and-the-projection, #rewind-and-reconcile).

Every function here runs as a job of the database thread (on it, or inline on the loop) with its
connection. Rows are never deleted; archiving sets ``active = 0`` and ``archived_reason``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from hermes_core import NewRow, Row, SessionNotFound, StorageError, storage_kit
from hermes_sqlite.db_state import ACTIVE_ROWS, ANY_ROWS, DbState
from hermes_sqlite.row_codec import (
    LOAD_COLUMNS,
    STATE_COLUMNS,
    as_loaded,
    insert_statement,
    row_params,
)
from hermes_sqlite.schema import begin, commit, rollback, write_transaction
from hermes_sqlite.session_fields import set_session_fields

TOUCH_SESSION = "UPDATE sessions SET updated_at = ? WHERE id = ? AND placeholder = 0"
# Each is one aggregate over the session's rows (see RowBuilder), which sorts them afterwards.
_LOAD_ACTIVE = (
    f"SELECT {ACTIVE_ROWS}({', '.join(LOAD_COLUMNS)}) FROM messages WHERE session_id = ? AND active = 1"
)
_LOAD_ALL = f"SELECT {ANY_ROWS}({', '.join(LOAD_COLUMNS + STATE_COLUMNS)}) FROM messages WHERE session_id = ?"
# A fixed number of placeholders keeps one prepared statement for every chunk; short chunks
# repeat their last id, which IN ignores.
_ARCHIVE_CHUNK = 100
_ARCHIVE = (
    "UPDATE messages SET archived_reason = CASE WHEN active = 1 THEN ? ELSE archived_reason END, "
    f"active = 0 WHERE session_id = ? AND id IN ({', '.join('?' * _ARCHIVE_CHUNK)})"
)


def _insert(
    cursor: sqlite3.Cursor, rows: Sequence[NewRow], first: int, session_id: str, now: float
) -> list[tuple[Any, ...]]:
    """Insert rows with the ids ``first``, ``first + 1``, ...; return their values."""
    values = [row_params(row, first + offset, session_id, now) for offset, row in enumerate(rows)]
    if len(values) == 1:
        cursor.execute(*insert_statement(values[0]))
        return values
    # Neighbouring rows of one shape go in one executemany.
    for sql, group in groupby(map(insert_statement, values), key=lambda statement: statement[0]):
        cursor.executemany(sql, [params for _, params in group])
    return values


def insert_rows(state: DbState, session_id: str, rows: Sequence[NewRow], now: float) -> list[tuple[Any, ...]]:
    """Insert rows with ids chosen here, inside the caller's write transaction.

    Choosing the ids up front (the write lock is held, so nobody else inserts) lets the
    position default and the placeholder tool-call ids be written by the INSERT itself.

    :param state: the connection's state, inside a write transaction.
    :param session_id: the owning session.
    :param rows: the rows.
    :param now: the creation time of rows that name none.
    :returns: the inserted values, in ``MESSAGE_COLUMNS`` order; the id comes first.
    """
    state.check_writes()
    first = state.claim_ids(len(rows))
    return _insert(state.cursor, rows, first, session_id, now)


def append_rows(
    state: DbState, session_id: str, rows: Sequence[NewRow], fields: Mapping[str, Any] | None = None
) -> list[int]:
    """Append rows to a session in one transaction and bump its ``updated_at`` when due.

    The transaction is spelled out rather than taken from ``write_transaction``: this runs
    once per message and every call saved counts.

    :param state: the connection's state.
    :param session_id: a stored session.
    :param rows: the rows.
    :param fields: session columns set in the same transaction (``updated_at`` moves to now).
    :returns: their ids, in order.
    :raises SessionNotFound: when the session is not stored.
    :raises InvalidValue: a field that is not a session column (nothing is written).
    """
    if not rows and not fields:
        return []
    now = time.time()
    cursor = state.cursor
    stamps = state.stamps
    begin(cursor)
    try:
        state.check_writes()
        if fields:
            set_session_fields(cursor, session_id, fields, now)
            bump = True
        else:
            # Without a bump the session is known to exist: this connection bumped it (so it
            # was a real session, not a lease placeholder) and sessions are never deleted.
            bump = stamps.bump_due(session_id, now)
            if bump and cursor.execute(TOUCH_SESSION, (now, session_id)).rowcount != 1:
                raise SessionNotFound(session_id)
        inserted = _insert(cursor, rows, state.claim_ids(len(rows)), session_id, now) if rows else []
        commit(cursor)
    except BaseException:
        rollback(state.conn, cursor)
        raise
    if rows:
        state.committed()
    if bump:
        stamps.bumped(session_id, now)
    cache = state.cache
    if cache.has(session_id):
        cache.extend(session_id, inserted_rows(state, session_id, inserted))
    return [values[0] for values in inserted]


def inserted_rows(state: DbState, session_id: str, inserted: list[tuple[Any, ...]]) -> list[Row]:
    """Turn values returned by :func:`insert_rows` into rows, as a load would return them.

    :param state: the connection's state.
    :param session_id: the owning session.
    :param inserted: the inserted values.
    :returns: the rows.
    """
    return state.builder.from_values(map(as_loaded, inserted), session_id)


def _select_rows(state: DbState, sql: str, session_id: str) -> list[Row]:
    """Run a load query (one aggregate over a session's rows); return the rows in order."""
    builder = state.builder
    builder.start(session_id)
    try:
        state.conn.execute(sql, (session_id,)).fetchall()
    except sqlite3.OperationalError:
        builder.take(sort=False)  # drop what was built before the failure
        if builder.error is not None:
            raise builder.error from None
        raise
    return builder.take(sort=True)


def load_rows(state: DbState, session_id: str, include_archived: bool) -> list[Row]:
    """Return a session's rows ordered by ``(position, id)``; active rows go through the cache.

    :param state: the connection's state.
    :param session_id: the session id.
    :param include_archived: also return soft-archived rows.
    :returns: the rows, empty for an unknown session.
    """
    if include_archived:
        return _select_rows(state, _LOAD_ALL, session_id)
    cache = state.cache
    cache.sync(state.conn)
    rows = cache.get(session_id)
    if rows is None:
        rows = _select_rows(state, _LOAD_ACTIVE, session_id)
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


def update_row_meta(state: DbState, row_id: int, meta: Mapping[str, Any]) -> None:
    """Merge keys into one row's ``meta`` JSON.

    :param state: the connection's state.
    :param row_id: the row.
    :param meta: keys to set.
    :raises StorageError: when there is no such row.
    """
    conn = state.conn
    with write_transaction(conn):
        found = conn.execute("SELECT session_id, meta FROM messages WHERE id = ?", (row_id,)).fetchone()
        if found is None:
            raise StorageError(f"no message row with id {row_id}")
        merged = storage_kit.load_mapping(found[1])
        merged.update(meta)
        conn.execute(
            "UPDATE messages SET meta = ? WHERE id = ?",
            (storage_kit.dump_json(merged) if merged else None, row_id),
        )
    state.cache.forget(found[0])
