"""Session rows: create, read, update, list (each function takes a cursor of a pooled connection)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_core import InvalidValue, SessionPage, SessionRecord
from hermes_postgres.codec import SESSION_COLUMNS, fold, session_from_row, session_params, session_value
from hermes_postgres.lease_ops import FENCE_CTE

_COUNT = "(SELECT count(*) FROM hermes_messages m WHERE m.session_id = s.id AND m.active)"
# The first user message shown in the history (markers left out).
_PREVIEW = (
    "(SELECT substr(m.content, 1, 200) FROM hermes_messages m WHERE m.session_id = s.id AND m.active "
    "AND m.role = 'user' AND (m.display_kind IS NULL OR m.display_kind NOT IN ('model_switch', 'hidden')) "
    "ORDER BY m.position, m.id LIMIT 1)"
)
SELECT = f"SELECT {', '.join('s.' + c for c in SESSION_COLUMNS)}, {_COUNT}, {_PREVIEW} FROM hermes_sessions s"
UPDATABLE = frozenset(SESSION_COLUMNS) - {"id"}


# A session insert as a SELECT, so a lease fence can guard it (typed: a SELECT infers no column types).
_CASTS = ", ".join(
    "%s::double precision" if c in ("created_at", "updated_at") else "%s::text" for c in SESSION_COLUMNS
)
INSERT_SELECT = (
    f"INSERT INTO hermes_sessions ({', '.join(SESSION_COLUMNS)}, title_folded) SELECT {_CASTS}, %s::text"
)


async def get_session(cur: Any, session_id: str) -> SessionRecord | None:
    """Return a stored session or None."""
    await cur.execute(f"{SELECT} WHERE s.id = %s", (session_id,))
    row = await cur.fetchone()
    return session_from_row(row) if row else None


async def find_session_by_title(cur: Any, title: str) -> SessionRecord | None:
    """Return the most recently active session titled exactly ``title``."""
    await cur.execute(f"{SELECT} WHERE s.title = %s ORDER BY s.updated_at DESC, s.id DESC LIMIT 1", (title,))
    row = await cur.fetchone()
    return session_from_row(row) if row else None


async def latest_session_for_channel(cur: Any, channel_key: str) -> str | None:
    """Return the most recently active session id with this channel key."""
    await cur.execute(
        "SELECT id FROM hermes_sessions WHERE channel_key = %s ORDER BY updated_at DESC, id DESC LIMIT 1",
        (channel_key,),
    )
    row = await cur.fetchone()
    return str(row[0]) if row else None


def insert_params(record: SessionRecord, now: float) -> tuple[Any, ...]:
    """Return the parameters of :data:`INSERT_SELECT` for a session."""
    return (*session_params(record, now), fold(record.title))


def check_fields(fields: Mapping[str, Any]) -> None:
    """Refuse field names that are not stored session columns.

    :raises InvalidValue: naming the unknown fields.
    """
    unknown = sorted(set(fields) - UPDATABLE)
    if unknown:
        raise InvalidValue("fields", sorted(UPDATABLE), f"unknown session fields: {', '.join(unknown)}")


async def set_session_fields(
    cur: Any, session_id: str, fields: Mapping[str, Any], now: float, fence: tuple[str, int] | None = None
) -> bool:
    """Update session columns and ``updated_at`` (``now`` unless given) in one statement, fenced
    on the writer lease ``(owner, epoch)`` when given; False when nothing was updated (no such
    session, or the lease moved)."""
    check_fields(fields)
    values = dict(fields)
    values.setdefault("updated_at", now)
    columns = sorted(values)
    assignments = [f"{c} = %s" for c in columns]
    params = [session_value(c, values[c]) for c in columns]
    if "title" in values:
        assignments.append("title_folded = %s")
        params.append(fold(values["title"]))
    update = f"UPDATE hermes_sessions SET {', '.join(assignments)} WHERE id = %s"
    if fence is None:
        await cur.execute(update, (*params, session_id))
    else:
        fenced = f"WITH {FENCE_CTE} {update} AND EXISTS (SELECT 1 FROM l)"
        await cur.execute(fenced, (session_id, *fence, *params, session_id))
    return bool(cur.rowcount == 1)


def encode_cursor(updated_at: float, session_id: str) -> str:
    """Make the opaque listing cursor that resumes after this session."""
    raw = json.dumps([updated_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """Read a cursor made by :func:`encode_cursor`.

    :raises InvalidValue: when it was not made here.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        updated_at, session_id = json.loads(raw)
        if isinstance(updated_at, bool) or not isinstance(updated_at, int | float):
            raise ValueError("bad timestamp")
        if not isinstance(session_id, str):
            raise ValueError("bad id")
    except (ValueError, TypeError, binascii.Error):
        raise InvalidValue("cursor", message="invalid cursor: pass back a next_cursor unchanged") from None
    return float(updated_at), session_id


async def list_sessions(
    cur: Any,
    *,
    limit: int,
    cursor: str | None,
    cwd: str | None,
    title: str | None,
    hidden_sources: Sequence[str],
) -> SessionPage:
    """List sessions newest activity first with ``(updated_at, id)`` keyset paging."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidValue("limit", "an integer ≥ 1")
    where: list[str] = ["true"]
    params: list[Any] = []
    if cursor is not None:
        after_time, after_id = decode_cursor(cursor)
        where.append("(s.updated_at < %s OR (s.updated_at = %s AND s.id < %s))")
        params += [after_time, after_time, after_id]
    if cwd is not None:
        where.append("s.cwd = %s")
        params.append(cwd)
    if title:
        where.append("strpos(s.title_folded, %s) > 0")
        params.append(title.casefold())
    hidden = list(dict.fromkeys(hidden_sources))
    if hidden:
        where.append("NOT (s.source = ANY(%s::text[]))")
        params.append(hidden)
    await cur.execute(
        f"{SELECT} WHERE {' AND '.join(where)} ORDER BY s.updated_at DESC, s.id DESC LIMIT %s",
        (*params, limit + 1),
    )
    rows = await cur.fetchall()
    sessions = [session_from_row(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        last = sessions[-1]
        next_cursor = encode_cursor(last.updated_at, last.id)
    return SessionPage(sessions=sessions, next_cursor=next_cursor)
