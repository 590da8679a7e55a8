"""Message rows: their fields, and building frozen ``Row`` and ``StoredToolCall`` objects cheaply
while loading a history.

Both are frozen slots dataclasses. Their ``__init__`` sets each field through
``object.__setattr__``, and even calling the slot descriptors directly costs a C call per field;
for a 1,000-row history that was over half the decoding time. A *twin* is a plain class with
exactly the same slots: plain attribute stores fill it (the interpreter specialises those into
direct slot writes), then assigning ``__class__`` turns it into a genuine instance of the frozen
class — same type, equality, hashing and repr as one made by its constructor.

Python allows that class switch only between classes with the same layout, so each twin is
checked once at import against an object built by the real constructor. If the check fails
(say a field is added upstream), the ``*_TWIN`` name is None and callers use the constructor.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hermes_core.storage import NewRow, Row, StoredToolCall
from hermes_core.storage_kit.json_columns import dump_meta, dump_parts

# Row fields in declaration order (a backend's message columns are named after them); the twin
# below must list the same names.
ROW_FIELDS: tuple[str, ...] = (
    "id",
    "session_id",
    "position",
    "role",
    "content",
    "parts",
    "tool_calls",
    "call_id",
    "provider_call_id",
    "tool_name",
    "display_kind",
    "active",
    "archived_reason",
    "model",
    "reasoning",
    "input_tokens",
    "output_tokens",
    "meta",
    "created_at",
)
TOOL_CALL_FIELDS: tuple[str, ...] = ("call_id", "provider_call_id", "name", "arguments")
# What a NewRow gives, in ROW_FIELDS order: every field but the id, the session id and the
# archive state, which the backend sets.
NEW_ROW_COLUMNS: tuple[str, ...] = tuple(
    name for name in ROW_FIELDS if name not in ("id", "session_id", "active", "archived_reason")
)


def new_row_values(row: NewRow, now: float, tool_calls: str | None) -> tuple[Any, ...]:
    """Return a new row's column values in :data:`NEW_ROW_COLUMNS` order.

    ``position`` stays None when the row names none (the backend uses the id then).

    :param now: the creation time used when the row names none.
    :param tool_calls: the row's tool calls as the backend stores them (None when there are none).
    :raises TypeError: for a value no column can hold (nothing is written then).
    """
    if not isinstance(row.role, str) or not isinstance(row.content, str):
        raise TypeError("a row's role and content must be strings")
    return (
        row.position,
        row.role,
        row.content,
        dump_parts(row.parts) if row.parts else None,
        tool_calls,
        row.call_id,
        row.provider_call_id,
        row.tool_name,
        row.display_kind,
        row.model,
        row.reasoning,
        None if row.input_tokens is None else int(row.input_tokens),
        None if row.output_tokens is None else int(row.output_tokens),
        dump_meta(row.meta) if row.meta else None,
        float(row.created_at) if row.created_at is not None else now,
    )


class RowTwin:
    """The slot layout of ``Row`` without its frozen ``__setattr__`` (fields: :data:`ROW_FIELDS`;
    callers fill it through an ``Any``-typed reference)."""

    __slots__ = ROW_FIELDS


class ToolCallTwin:
    """The slot layout of ``StoredToolCall`` without its frozen ``__setattr__``."""

    __slots__ = TOOL_CALL_FIELDS

    call_id: str
    provider_call_id: str
    name: str
    arguments: str


def _adopts(twin: type, target: type, names: tuple[str, ...]) -> bool:
    """Say whether a filled ``twin`` can become a ``target`` equal to one built normally.

    :param twin: the mutable class.
    :param target: the frozen dataclass.
    :param names: the field names, in declaration order.
    :returns: True when the class switch works and gives an equal object.
    """
    if tuple(f.name for f in dataclasses.fields(target)) != names:
        return False
    if getattr(target, "__slots__", None) != names:
        return False
    values = [f"value {index}" for index in range(len(names))]
    try:
        probe: Any = object.__new__(twin)
        for name, value in zip(names, values, strict=True):
            setattr(probe, name, value)
        probe.__class__ = target
    except TypeError:
        return False
    return type(probe) is target and probe == target(*values)


ROW_TWIN: type[RowTwin] | None = RowTwin if _adopts(RowTwin, Row, ROW_FIELDS) else None
TOOL_CALL_TWIN: type[ToolCallTwin] | None = (
    ToolCallTwin if _adopts(ToolCallTwin, StoredToolCall, TOOL_CALL_FIELDS) else None
)
