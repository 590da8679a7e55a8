"""Builders shared by the SQLite backend tests."""

from __future__ import annotations

from typing import Any

from hermes_core import NewRow, SessionRecord


def record(session_id: str, **fields: Any) -> SessionRecord:
    """Return a session record with test defaults.

    :param session_id: the id.
    :param fields: fields to override.
    :returns: the record.
    """
    values: dict[str, Any] = {"source": "tui", "cwd": "/work", "profile": "default"}
    values.update(fields)
    return SessionRecord(id=session_id, **values)


def user(text: str, **fields: Any) -> NewRow:
    """Return a new user row."""
    return NewRow(role="user", content=text, **fields)


def assistant(text: str, **fields: Any) -> NewRow:
    """Return a new assistant row."""
    return NewRow(role="assistant", content=text, **fields)
