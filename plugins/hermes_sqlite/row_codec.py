"""Convert message rows: ``NewRow`` to INSERT parameters, fetched tuples to ``Row`` objects.

Loading a long history is dominated by turning fetched values into ``Row`` objects, so that
path is tuned; see :func:`rows_from_values`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hermes_core import NewRow, Row
from hermes_sqlite.codec import (
    EMPTY_META,
    dump_json,
    dump_parts,
    dump_tool_calls,
    load_meta,
    load_parts,
    load_tool_calls,
)
from hermes_sqlite.slot_twins import ROW_FIELDS, ROW_TWIN

# Message columns in Row field order (the INSERT parameter order).
MESSAGE_COLUMNS: tuple[str, ...] = ROW_FIELDS
# What a load selects: every column but the session id, which the caller knows, and the archive
# state, which is known for active rows; loading every row adds STATE_COLUMNS at the end.
STATE_COLUMNS: tuple[str, ...] = ("active", "archived_reason")
LOAD_COLUMNS: tuple[str, ...] = tuple(
    c for c in MESSAGE_COLUMNS if c != "session_id" and c not in STATE_COLUMNS
)


def row_params(row: NewRow, row_id: int, session_id: str, now: float) -> tuple[Any, ...]:
    """Build the INSERT parameters of one new row, in :data:`MESSAGE_COLUMNS` order.

    :param row: the row to insert.
    :param row_id: the id chosen for it.
    :param session_id: the owning session.
    :param now: the creation time used when the row names none.
    :returns: the parameter tuple.
    """
    if not isinstance(row.role, str) or not isinstance(row.content, str):
        raise TypeError("a row's role and content must be strings")
    return (
        row_id,
        session_id,
        row.position if row.position is not None else row_id,
        row.role,
        row.content,
        dump_parts(row.parts) if row.parts else None,
        dump_tool_calls(row.tool_calls, row_id) if row.tool_calls else None,
        row.call_id,
        row.provider_call_id,
        row.tool_name,
        row.display_kind,
        1,
        None,
        row.model,
        row.reasoning,
        None if row.input_tokens is None else int(row.input_tokens),
        None if row.output_tokens is None else int(row.output_tokens),
        dump_json(row.meta) if row.meta else None,
        float(row.created_at) if row.created_at is not None else now,
    )


def rows_from_values(values: Iterable[tuple[Any, ...]], session_id: str) -> list[Row]:
    """Turn fetched message tuples of one session into active rows.

    Building rows is the hot part of loading a history; see :mod:`hermes_sqlite.slot_twins`.

    :param values: tuples in :data:`LOAD_COLUMNS` order.
    :param session_id: the session they belong to.
    :returns: the rows, each ``active`` with no ``archived_reason``.
    """
    twin = ROW_TWIN
    if twin is None:
        return [_make_row_slow(v, session_id) for v in values]
    out: list[Row] = []
    append = out.append
    new = object.__new__
    for (
        row_id,
        position,
        role,
        content,
        parts,
        tool_calls,
        call_id,
        provider_call_id,
        tool_name,
        display_kind,
        model,
        reasoning,
        input_tokens,
        output_tokens,
        meta,
        created_at,
    ) in values:
        row = new(twin)
        row.id = row_id
        row.session_id = session_id
        row.position = position
        row.role = role
        row.content = content
        row.parts = load_parts(parts) if parts else ()
        row.tool_calls = load_tool_calls(tool_calls) if tool_calls else ()
        row.call_id = call_id
        row.provider_call_id = provider_call_id
        row.tool_name = tool_name
        row.display_kind = display_kind
        row.active = True
        row.archived_reason = None
        row.model = model
        row.reasoning = reasoning
        row.input_tokens = input_tokens
        row.output_tokens = output_tokens
        row.meta = load_meta(meta) if meta else EMPTY_META
        row.created_at = created_at
        row.__class__ = Row  # type: ignore[assignment]
        append(row)  # type: ignore[arg-type]
    return out


def rows_with_state_from_values(values: Iterable[tuple[Any, ...]], session_id: str) -> list[Row]:
    """Turn fetched message tuples that end with ``active, archived_reason`` into rows.

    :param values: tuples in :data:`LOAD_COLUMNS` + :data:`STATE_COLUMNS` order.
    :param session_id: the session they belong to.
    :returns: the rows, archived ones included.
    """
    values = list(values)
    rows = rows_from_values([v[:-2] for v in values], session_id)
    set_field = object.__setattr__
    for row, v in zip(rows, values, strict=True):
        active, reason = v[-2:]
        if active != 1 or reason is not None:
            # Still being built, seen by nobody: what Row.__init__ itself does for a frozen class.
            set_field(row, "active", active == 1)
            set_field(row, "archived_reason", reason)
    return rows


def _make_row_slow(v: tuple[Any, ...], session_id: str) -> Row:
    return Row(
        id=v[0],
        session_id=session_id,
        position=v[1],
        role=v[2],
        content=v[3],
        parts=load_parts(v[4]),
        tool_calls=load_tool_calls(v[5]),
        call_id=v[6],
        provider_call_id=v[7],
        tool_name=v[8],
        display_kind=v[9],
        active=True,
        archived_reason=None,
        model=v[10],
        reasoning=v[11],
        input_tokens=v[12],
        output_tokens=v[13],
        meta=load_meta(v[14]),
        created_at=v[15],
    )
