r"""Message rows in PostgreSQL columns: what an insert binds, tool calls, and loaded ``Row``\s.

Tool calls whose ``call_id`` is the placeholder ``""`` are stored as such and get their
``tc_<row id>_<index>`` on load, so an insert needs no second pass once the id is known. The
backend-neutral conversions (JSON columns, metas, parts, sessions) are ``hermes_core.storage_kit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_core import NewRow, Row, StoredToolCall, storage_kit

decode_json = storage_kit.decode_json
dump_json = storage_kit.dump_json

# What a load selects, in this order: every Row field but the session id, which the caller knows.
LOAD_COLUMNS: tuple[str, ...] = tuple(c for c in storage_kit.ROW_FIELDS if c != "session_id")
# What an insert binds per row, in this order (the id, the session id and the archive state come
# from the statement).
INSERT_COLUMNS: tuple[str, ...] = storage_kit.NEW_ROW_COLUMNS
# Their SQL types (the others are text), for the casts of the insert's parameters.
_NOT_TEXT = {
    "position": "bigint",
    "input_tokens": "bigint",
    "output_tokens": "bigint",
    "created_at": "double precision",
}
INSERT_TYPES: tuple[str, ...] = tuple(_NOT_TEXT.get(c, "text") for c in INSERT_COLUMNS)


def dump_tool_calls(calls: Sequence[StoredToolCall]) -> str | None:
    """Encode tool calls as stored (placeholder ids stay ``""``)."""
    if not calls:
        return None
    for call in calls:
        for value in (call.call_id, call.provider_call_id, call.name, call.arguments):
            if not isinstance(value, str):
                raise TypeError("a tool call's fields must be strings")
    return dump_json([[c.call_id, c.provider_call_id, c.name, c.arguments] for c in calls])


def load_tool_calls(text: str | None, row_id: int) -> tuple[StoredToolCall, ...]:
    """Decode the ``tool_calls`` column, filling placeholder ids from the row id."""
    if not text:
        return ()
    return tuple(
        [
            StoredToolCall(call_id or f"tc_{row_id}_{index}", provider_call_id, name, arguments)
            for index, (call_id, provider_call_id, name, arguments) in enumerate(decode_json(text))
        ]
    )


def row_values(row: NewRow, now: float) -> tuple[Any, ...]:
    """Return one new row's values in :data:`INSERT_COLUMNS` order.

    :raises TypeError: for a value no column can hold (nothing is written then).
    """
    return storage_kit.new_row_values(row, now, dump_tool_calls(row.tool_calls) if row.tool_calls else None)


def row_from_values(session_id: str, values: Sequence[Any]) -> Row:
    """Build a ``Row`` from :data:`LOAD_COLUMNS` values."""
    twin = storage_kit.ROW_TWIN
    if twin is None:  # Row's layout changed: its constructor instead
        fields = dict(zip(LOAD_COLUMNS, values, strict=True))
        fields["parts"] = storage_kit.load_parts(fields["parts"])
        fields["tool_calls"] = load_tool_calls(fields["tool_calls"], fields["id"])
        fields["meta"] = storage_kit.load_meta(fields["meta"])
        return Row(session_id=session_id, **fields)
    row: Any = object.__new__(twin)
    (
        row.id,
        row.position,
        row.role,
        row.content,
        parts,
        tool_calls,
        row.call_id,
        row.provider_call_id,
        row.tool_name,
        row.display_kind,
        row.active,
        row.archived_reason,
        row.model,
        row.reasoning,
        row.input_tokens,
        row.output_tokens,
        meta,
        row.created_at,
    ) = values
    row.session_id = session_id
    row.parts = storage_kit.load_parts(parts)
    row.tool_calls = load_tool_calls(tool_calls, row.id)
    row.meta = storage_kit.load_meta(meta)
    row.__class__ = Row
    return row  # type: ignore[no-any-return]


def fold(title: str | None) -> str | None:
    """The case-folded title the listing filter searches (done here: the server's lower() may
    only know ASCII, depending on its locale)."""
    return title.casefold() if isinstance(title, str) else None
