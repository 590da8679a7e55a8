"""Session rows: the columns, a ``SessionRecord`` to column values and back, listing pages."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any

from hermes_core.errors import InvalidValue
from hermes_core.storage import SessionPage, SessionRecord
from hermes_core.storage_kit.json_columns import dump_mapping, load_mapping

# Session columns in SessionRecord field order (message_count and preview are computed).
SESSION_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "cwd",
    "profile",
    "model",
    "provider",
    "reasoning_effort",
    "title",
    "title_origin",
    "parent_session_id",
    "channel_key",
    "system_overlay",
    "usage",
    "extra",
    "created_at",
    "updated_at",
)
# Columns holding a mapping as JSON text (NULL when empty).
JSON_SESSION_COLUMNS = frozenset({"usage", "extra"})


def session_params(record: SessionRecord, now: float) -> tuple[Any, ...]:
    """Return a session's column values in :data:`SESSION_COLUMNS` order.

    :param now: the time used for a zero ``created_at`` / ``updated_at``.
    """
    created_at = record.created_at or now
    return (
        record.id,
        record.source,
        record.cwd,
        record.profile,
        record.model,
        record.provider,
        record.reasoning_effort,
        record.title,
        record.title_origin,
        record.parent_session_id,
        record.channel_key,
        record.system_overlay,
        dump_mapping(record.usage),
        dump_mapping(record.extra),
        created_at,
        record.updated_at or max(created_at, now),
    )


def session_value(column: str, value: Any) -> Any:
    """Encode one session field (a :data:`SESSION_COLUMNS` entry) for an UPDATE."""
    return dump_mapping(value) if column in JSON_SESSION_COLUMNS else value


def session_from_values(values: Sequence[Any]) -> SessionRecord:
    """Build a record from :data:`SESSION_COLUMNS` values, then the active message count and,
    optionally, the preview (the first user message)."""
    count = len(SESSION_COLUMNS)
    preview = values[count + 1] if len(values) > count + 1 else None
    fields = dict(zip(SESSION_COLUMNS, values[:count], strict=True))
    fields["usage"] = load_mapping(fields["usage"])
    fields["extra"] = load_mapping(fields["extra"])
    return SessionRecord(**fields, message_count=int(values[count]), preview=preview or "")


def encode_cursor(updated_at: float, session_id: str) -> str:
    """Make the opaque listing cursor that resumes after this session."""
    raw = json.dumps([updated_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """Read a cursor made by :func:`encode_cursor`: ``(updated_at, id)`` to continue after.

    :raises InvalidValue: when it was not made by :func:`encode_cursor`.
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


def check_limit(limit: object) -> int:
    """Return a listing's page size.

    :raises InvalidValue: unless it is an integer ≥ 1.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidValue("limit", "an integer ≥ 1")
    return limit


class SessionListing:
    """A backend's session listing: newest activity first, continuing after a cursor in
    ``(updated_at, id)`` order.

    :param select: the query up to its WHERE clause, sessions aliased ``s``; each result row is
        :data:`SESSION_COLUMNS`, the active message count and the preview.
    :param always: the condition every listed session meets (``true`` when there is none).
    :param mark: the driver's parameter placeholder (``?``, ``%s``).
    :param title_contains: the condition that the case-folded title contains the one parameter.
    :param source_not_in: the condition and parameters leaving out these sources (at least one).
    """

    def __init__(
        self,
        *,
        select: str,
        always: str,
        mark: str,
        title_contains: str,
        source_not_in: Callable[[list[str]], tuple[str, list[Any]]],
    ) -> None:
        self.select = select
        self.always = always
        self.mark = mark
        self.title_contains = title_contains
        self.source_not_in = source_not_in

    def query(
        self,
        limit: int,
        *,
        cursor: str | None = None,
        cwd: str | None = None,
        title: str | None = None,
        hidden_sources: Sequence[str] = (),
    ) -> tuple[str, list[Any]]:
        """Return the SQL and parameters fetching one page (and one row more, if there is more).

        :raises InvalidValue: for a limit that is not an integer ≥ 1, or a cursor not made by
            :func:`encode_cursor`.
        """
        limit = check_limit(limit)
        mark = self.mark
        where = [self.always]
        params: list[Any] = []
        if cursor is not None:
            after_time, after_id = decode_cursor(cursor)
            where.append(f"(s.updated_at < {mark} OR (s.updated_at = {mark} AND s.id < {mark}))")
            params += [after_time, after_time, after_id]
        if cwd is not None:
            where.append(f"s.cwd = {mark}")
            params.append(cwd)
        if title:
            where.append(self.title_contains)
            params.append(title.casefold())
        hidden = list(dict.fromkeys(hidden_sources))
        if hidden:
            condition, values = self.source_not_in(hidden)
            where.append(condition)
            params += values
        sql = f"{self.select} WHERE {' AND '.join(where)} ORDER BY s.updated_at DESC, s.id DESC LIMIT {mark}"
        return sql, [*params, limit + 1]

    def page(self, rows: Sequence[Sequence[Any]], limit: int) -> SessionPage:
        """Make the page from the rows :meth:`query` fetched."""
        return session_page(rows, limit)


def session_page(
    rows: Sequence[Sequence[Any]],
    limit: int,
    build: Callable[[Sequence[Any]], SessionRecord] = session_from_values,
) -> SessionPage:
    """Make a listing page from up to ``limit + 1`` rows fetched newest activity first.

    A row beyond ``limit`` means there is more: the page then carries the cursor after its last
    session.
    """
    sessions = [build(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        last = sessions[-1]
        next_cursor = encode_cursor(last.updated_at, last.id)
    return SessionPage(sessions=sessions, next_cursor=next_cursor)
