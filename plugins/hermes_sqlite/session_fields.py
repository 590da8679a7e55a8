"""Setting a stored session's columns inside a write transaction (the session update, and the
reply's row stored with the usage total in the same transaction)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from hermes_core import InvalidValue, SessionNotFound, storage_kit

#: The columns a session update may set (names as in ``SessionRecord``).
UPDATABLE = frozenset(storage_kit.SESSION_COLUMNS) - {"id"}


def set_session_fields(
    conn: sqlite3.Connection | sqlite3.Cursor, session_id: str, fields: Mapping[str, Any], now: float
) -> None:
    """Update session columns and bump ``updated_at``, inside the caller's transaction.

    :param conn: the connection (or a cursor of it), inside a write transaction.
    :param session_id: the session id.
    :param fields: column names as in ``SessionRecord``; ``updated_at`` defaults to ``now``.
    :param now: the current time.
    :raises InvalidValue: for a field that is not a stored session column.
    :raises SessionNotFound: when there is no such session.
    """
    unknown = sorted(set(fields) - UPDATABLE)
    if unknown:
        raise InvalidValue("fields", sorted(UPDATABLE), f"unknown session fields: {', '.join(unknown)}")
    values = dict(fields)
    values.setdefault("updated_at", now)
    columns = sorted(values)
    cursor = conn.execute(
        f"UPDATE sessions SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ? AND placeholder = 0",
        (*(storage_kit.session_value(c, values[c]) for c in columns), session_id),
    )
    if cursor.rowcount != 1:
        raise SessionNotFound(session_id)
