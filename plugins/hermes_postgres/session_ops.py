"""Session rows: create, read, update, list (each function takes a cursor of a pooled connection)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_core import InvalidValue, SessionPage, SessionRecord, storage_kit
from hermes_postgres.codec import fold
from hermes_postgres.lease_ops import FENCE_CTE

SESSION_COLUMNS = storage_kit.SESSION_COLUMNS

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
    return storage_kit.session_from_values(row) if row else None


async def find_session_by_title(cur: Any, title: str) -> SessionRecord | None:
    """Return the most recently active session titled exactly ``title``."""
    await cur.execute(f"{SELECT} WHERE s.title = %s ORDER BY s.updated_at DESC, s.id DESC LIMIT 1", (title,))
    row = await cur.fetchone()
    return storage_kit.session_from_values(row) if row else None


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
    return (*storage_kit.session_params(record, now), fold(record.title))


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
    params = [storage_kit.session_value(c, values[c]) for c in columns]
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


_LISTING = storage_kit.SessionListing(
    select=SELECT,
    always="true",
    mark="%s",
    title_contains="strpos(s.title_folded, %s) > 0",
    source_not_in=lambda sources: ("NOT (s.source = ANY(%s::text[]))", [sources]),
)


async def list_sessions(cur: Any, limit: int, **filters: Any) -> SessionPage:
    """List sessions newest activity first with ``(updated_at, id)`` keyset paging.

    :param filters: ``cursor``, ``cwd``, ``title`` and ``hidden_sources`` (see ``SessionListing``).
    """
    sql, params = _LISTING.query(limit, **filters)
    await cur.execute(sql, params)
    return _LISTING.page(await cur.fetchall(), limit)
