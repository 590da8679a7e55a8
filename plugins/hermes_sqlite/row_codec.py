"""Convert message rows: ``NewRow`` to INSERT parameters, fetched tuples to ``Row`` objects.

Loading a long history is dominated by building ``Row`` objects, so that path is tuned; see
:func:`rows_from_values`.
"""

from __future__ import annotations

import dataclasses
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

# Message columns in Row field order, so a fetched tuple maps onto Row positionally.
MESSAGE_COLUMNS: tuple[str, ...] = (
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
# What a load selects: every column but the session id, which the caller knows.
LOAD_COLUMNS: tuple[str, ...] = tuple(c for c in MESSAGE_COLUMNS if c != "session_id")


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


# Building rows is the hot part of loading a history. Row is a frozen slots dataclass, whose
# __init__ goes through object.__setattr__ once per field; writing the slots through their
# descriptors directly is about twice as fast. Used only while the fields are the ones we know.
_FAST_ROWS = getattr(Row, "__slots__", None) is not None and (
    tuple(f.name for f in dataclasses.fields(Row)) == MESSAGE_COLUMNS
)
_SETTERS = tuple(getattr(Row, name).__set__ for name in MESSAGE_COLUMNS) if _FAST_ROWS else ()


def rows_from_values(values: Iterable[tuple[Any, ...]], session_id: str) -> list[Row]:
    """Turn message column tuples of one session into rows.

    :param values: tuples in :data:`LOAD_COLUMNS` order.
    :param session_id: the session they belong to.
    :returns: the rows.
    """
    out: list[Row] = []
    append = out.append
    if not _FAST_ROWS:
        for v in values:
            append(_make_row_slow(v, session_id))
        return out
    (s_id, s_sid, s_pos, s_role, s_content, s_parts, s_calls, s_cid, s_pcid, s_tool, s_kind) = _SETTERS[:11]
    (s_active, s_reason, s_model, s_reasoning, s_in, s_out, s_meta, s_created) = _SETTERS[11:]
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
        active,
        archived_reason,
        model,
        reasoning,
        input_tokens,
        output_tokens,
        meta,
        created_at,
    ) in values:
        row = new(Row)
        s_id(row, row_id)
        s_sid(row, session_id)
        s_pos(row, position)
        s_role(row, role)
        s_content(row, content)
        s_parts(row, load_parts(parts) if parts else ())
        s_calls(row, load_tool_calls(tool_calls) if tool_calls else ())
        s_cid(row, call_id)
        s_pcid(row, provider_call_id)
        s_tool(row, tool_name)
        s_kind(row, display_kind)
        s_active(row, active == 1)
        s_reason(row, archived_reason)
        s_model(row, model)
        s_reasoning(row, reasoning)
        s_in(row, input_tokens)
        s_out(row, output_tokens)
        s_meta(row, load_meta(meta) if meta else EMPTY_META)
        s_created(row, created_at)
        append(row)
    return out


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
        active=v[10] == 1,
        archived_reason=v[11],
        model=v[12],
        reasoning=v[13],
        input_tokens=v[14],
        output_tokens=v[15],
        meta=load_meta(v[16]),
        created_at=v[17],
    )
