"""Session rows: create, read, update, list, rewrite, and the writer lease
(docs/reference/core.md#sessions-and-storage).

Every function here runs as a job of the database thread (on it, or inline on the loop) with its
connection. A session row with ``placeholder = 1`` only reserves an id for a lease holder: it is
invisible to reads until ``create_session`` fills it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_core import (
    NewRow,
    RecordClaim,
    SessionNotFound,
    SessionPage,
    SessionRecord,
    StorageError,
    storage_kit,
)
from hermes_sqlite import record_ops
from hermes_sqlite.db_state import DbState
from hermes_sqlite.message_ops import TOUCH_SESSION, archive_rows, insert_rows
from hermes_sqlite.schema import write_transaction
from hermes_sqlite.session_fields import set_session_fields

SESSION_COLUMNS = storage_kit.SESSION_COLUMNS
_COUNT = "(SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active = 1)"
# The first user message shown in the history (markers left out), walked along the session index.
_PREVIEW = (
    "(SELECT substr(m.content, 1, 200) FROM messages m WHERE m.session_id = s.id AND m.active = 1 "
    "AND m.role = 'user' AND (m.display_kind IS NULL OR m.display_kind NOT IN ('model_switch', 'hidden')) "
    "ORDER BY m.position, m.id LIMIT 1)"
)
_SELECT = f"SELECT {', '.join('s.' + c for c in SESSION_COLUMNS)}, {_COUNT}, {_PREVIEW} FROM sessions s"
_INSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}, placeholder) "
    f"VALUES ({', '.join('?' * len(SESSION_COLUMNS))}, 0)"
)
_INSERT_LEASED_SESSION = (
    f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}, placeholder, lease_owner, lease_heartbeat_at, "
    f"lease_expires_at) VALUES ({', '.join('?' * len(SESSION_COLUMNS))}, 0, ?, ?, ?)"
)
_TAKE_LEASE = "UPDATE sessions SET lease_owner = ?, lease_heartbeat_at = ?, lease_expires_at = ? WHERE id = ?"
_FILL_PLACEHOLDER = (
    f"UPDATE sessions SET {', '.join(c + ' = ?' for c in SESSION_COLUMNS[1:])}, placeholder = 0 "
    "WHERE id = ? AND placeholder = 1"
)


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    """Return a session (not a placeholder) or None.

    :param conn: the connection.
    :param session_id: the session id.
    :returns: the record with its active message count.
    """
    row = conn.execute(f"{_SELECT} WHERE s.id = ? AND s.placeholder = 0", (session_id,)).fetchone()
    return storage_kit.session_from_values(row) if row else None


def find_session_by_title(conn: sqlite3.Connection, title: str) -> SessionRecord | None:
    """Return the most recently active session whose title is exactly ``title``.

    :param conn: the connection.
    :param title: the exact title.
    :returns: the record, or None.
    """
    row = conn.execute(
        f"{_SELECT} WHERE s.title = ? AND s.placeholder = 0 ORDER BY s.updated_at DESC, s.id DESC LIMIT 1",
        (title,),
    ).fetchone()
    return storage_kit.session_from_values(row) if row else None


def latest_session_for_channel(conn: sqlite3.Connection, channel_key: str) -> str | None:
    """Return the id of the most recently active session carrying ``channel_key``.

    :param conn: the connection.
    :param channel_key: the channel key.
    :returns: the session id, or None.
    """
    row = conn.execute(
        "SELECT id FROM sessions WHERE channel_key = ? AND placeholder = 0 "
        "ORDER BY updated_at DESC, id DESC LIMIT 1",
        (channel_key,),
    ).fetchone()
    return row[0] if row else None


def create_session(state: DbState, record: SessionRecord, rows: Sequence[NewRow]) -> list[int]:
    """Insert a session (filling its lease placeholder, if any) and its first rows.

    :param state: the connection's state.
    :param record: the session; zero timestamps mean now.
    :param rows: its first rows.
    :returns: the new row ids.
    :raises StorageError: when a session with this id is already stored.
    """
    now = time.time()
    params = storage_kit.session_params(record, now)
    conn = state.conn
    with write_transaction(conn):
        existing = conn.execute("SELECT placeholder FROM sessions WHERE id = ?", (record.id,)).fetchone()
        if existing is None:
            conn.execute(_INSERT_SESSION, params)
        elif existing[0]:
            conn.execute(_FILL_PLACEHOLDER, (*params[1:], record.id))
        else:
            raise StorageError(f"session {record.id} already exists")
        inserted = insert_rows(state, record.id, rows, now) if rows else []
    state.stamps.forget(record.id)
    state.cache.forget(record.id)
    return [values[0] for values in inserted]


def create_leased_session(
    state: DbState,
    record: SessionRecord,
    rows: Sequence[NewRow],
    owner: str,
    ttl_s: float,
    claims: Sequence[RecordClaim] = (),
) -> list[int]:
    """Take the writer lease of a session not stored yet and store it with its first rows and the
    records it claims, in one transaction.

    :param state: the connection's state.
    :param record: the session; zero timestamps mean now.
    :param rows: its first rows.
    :param owner: our owner string.
    :param ttl_s: seconds until the lease expires unless renewed.
    :param claims: records to store for their owners (see ``RecordClaim``).
    :returns: the new row ids.
    :raises StorageError: when the session is stored already, its placeholder is leased by
        another live holder, or a claimed record is there.
    """
    now = time.time()
    params = storage_kit.session_params(record, now)
    conn = state.conn
    with write_transaction(conn):
        if claims:
            record_ops.claim_absent(conn, claims, now)
        existing = conn.execute(
            "SELECT placeholder, lease_owner, lease_expires_at FROM sessions WHERE id = ?", (record.id,)
        ).fetchone()
        if existing is None:
            conn.execute(_INSERT_LEASED_SESSION, (*params, owner, now, now + ttl_s))
        elif not existing[0]:
            raise StorageError(f"session {record.id} already exists")
        elif existing[1] not in (None, owner) and existing[2] is not None and existing[2] >= now:
            raise StorageError(f"the writer lease of the new session {record.id} is held by {existing[1]}")
        else:
            conn.execute(_FILL_PLACEHOLDER, (*params[1:], record.id))
            conn.execute(_TAKE_LEASE, (owner, now, now + ttl_s, record.id))
        inserted = insert_rows(state, record.id, rows, now) if rows else []
    state.stamps.forget(record.id)
    state.cache.forget(record.id)
    return [values[0] for values in inserted]


def update_session(conn: sqlite3.Connection, session_id: str, fields: Mapping[str, Any]) -> None:
    """Update session columns in their own transaction.

    :param conn: the connection.
    :param session_id: the session id.
    :param fields: column names as in ``SessionRecord``.
    """
    now = time.time()
    with write_transaction(conn):
        set_session_fields(conn, session_id, fields, now)


def rewrite(
    state: DbState,
    session_id: str,
    archive_row_ids: Sequence[int],
    archived_reason: str | None,
    append: Sequence[NewRow],
    session_fields: Mapping[str, Any] | None,
) -> list[int]:
    """Archive, append and update the session in one transaction.

    :param state: the connection's state.
    :param session_id: a stored session.
    :param archive_row_ids: rows of this session to soft-archive.
    :param archived_reason: why (``rewind``, ``compress``, ``reconcile``).
    :param append: rows to append.
    :param session_fields: session columns to set.
    :returns: the ids of the appended rows.
    """
    now = time.time()
    conn = state.conn
    with write_transaction(conn):
        if conn.execute(TOUCH_SESSION, (now, session_id)).rowcount != 1:
            raise SessionNotFound(session_id)
        if archive_row_ids:
            archive_rows(conn, session_id, archive_row_ids, archived_reason)
        inserted = insert_rows(state, session_id, append, now) if append else []
        if session_fields:
            set_session_fields(conn, session_id, session_fields, now)
    state.stamps.forget(session_id)
    state.cache.forget(session_id)
    return [values[0] for values in inserted]


_LISTING = storage_kit.SessionListing(
    select=_SELECT,
    always="s.placeholder = 0",
    mark="?",
    title_contains="instr(hermes_casefold(s.title), ?) > 0",
    source_not_in=lambda sources: (f"s.source NOT IN ({', '.join('?' * len(sources))})", sources),
)


def list_sessions(
    conn: sqlite3.Connection,
    *,
    limit: int,
    cursor: str | None,
    cwd: str | None,
    title: str | None,
    hidden_sources: Sequence[str],
) -> SessionPage:
    """List sessions newest activity first, ``(updated_at, id)`` keyset paging.

    :param conn: the connection.
    :param limit: page size.
    :param cursor: where the previous page ended.
    :param cwd: only this exact workspace.
    :param title: only titles containing this, ignoring case.
    :param hidden_sources: sources to leave out.
    :returns: the page.
    """
    sql, params = _LISTING.query(limit, cursor=cursor, cwd=cwd, title=title, hidden_sources=hidden_sources)
    return _LISTING.page(conn.execute(sql, params).fetchall(), limit)


def acquire_lease(
    conn: sqlite3.Connection, session_id: str, owner: str, ttl_s: float, take_over: str | None = None
) -> str | None:
    """Take the writer lease, reserving the id with a placeholder when it is not stored yet.

    :param conn: the connection.
    :param session_id: the session id.
    :param owner: our owner string.
    :param ttl_s: seconds until the lease expires.
    :param take_over: a holder (known to be dead) whose unexpired lease may be taken anyway.
    :returns: None on success, else the current holder's owner string.
    """
    now = time.time()
    with write_transaction(conn):
        row = conn.execute(
            "SELECT lease_owner, lease_expires_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO sessions (id, placeholder, created_at, updated_at, lease_owner, "
                "lease_heartbeat_at, lease_expires_at) VALUES (?, 1, ?, ?, ?, ?, ?)",
                (session_id, now, now, owner, now, now + ttl_s),
            )
            return None
        holder, expires_at = row
        if (
            holder is not None
            and holder != owner
            and holder != take_over
            and expires_at is not None
            and expires_at >= now
        ):
            return str(holder)
        conn.execute(_TAKE_LEASE, (owner, now, now + ttl_s, session_id))
        return None


def renew_lease(conn: sqlite3.Connection, session_id: str, owner: str, ttl_s: float) -> bool:
    """Extend our lease.

    :param conn: the connection.
    :param session_id: the session id.
    :param owner: our owner string.
    :param ttl_s: seconds from now until it expires.
    :returns: False when someone else holds it or nobody does.
    """
    now = time.time()
    with write_transaction(conn):
        cursor = conn.execute(
            "UPDATE sessions SET lease_heartbeat_at = ?, lease_expires_at = ? "
            "WHERE id = ? AND lease_owner = ?",
            (now, now + ttl_s, session_id, owner),
        )
        return cursor.rowcount == 1


def release_lease(conn: sqlite3.Connection, session_id: str, owner: str) -> None:
    """Drop our lease; a placeholder that never became a session goes away with it.

    :param conn: the connection.
    :param session_id: the session id.
    :param owner: our owner string; another holder's lease is left alone.
    """
    with write_transaction(conn):
        # A placeholder has no rows and no data: removing it loses nothing and keeps sessions
        # that were opened but never used from piling up.
        conn.execute(
            "DELETE FROM sessions WHERE id = ? AND lease_owner = ? AND placeholder = 1", (session_id, owner)
        )
        conn.execute(
            "UPDATE sessions SET lease_owner = NULL, lease_heartbeat_at = NULL, lease_expires_at = NULL "
            "WHERE id = ? AND lease_owner = ?",
            (session_id, owner),
        )
