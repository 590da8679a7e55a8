"""Short arrays bound as scalars: ``ARRAY[%s::text, %s::text]`` instead of one list parameter.

A statement that writes several rows at once takes one array per column (``unnest`` makes the
rows again). psycopg dumps a Python list parameter by scanning it for its element type and
building a dumper for it on every call, about 10 µs a column; a create-session statement has
fifteen such columns, the event log's write eight. Most calls carry one or two rows, so up to
:data:`MOST` elements each value is bound as its own scalar parameter inside an ``ARRAY[...]``
constructor (one statement text per length: a handful of prepared statements per connection);
longer arrays are bound as lists as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

#: The longest arrays written inline; longer ones are bound as list parameters.
MOST = 4


@cache
def _placeholders(kinds: tuple[str, ...], length: int) -> tuple[str, ...]:
    if length > MOST:
        return tuple(f"%s::{kind}[]" for kind in kinds)
    return tuple(f"ARRAY[{', '.join([f'%s::{kind}'] * length)}]::{kind}[]" for kind in kinds)


def arrays(kinds: Sequence[str], columns: Sequence[Sequence[Any]]) -> tuple[tuple[str, ...], list[Any]]:
    """Return one SQL array expression per column (of SQL type ``kinds[i]``) and their parameters.

    Every column has the same length. Up to :data:`MOST` the expressions are ``ARRAY[...]`` of
    scalar ``%s`` placeholders and the parameters are the values one by one; beyond, each is one
    ``%s::kind[]`` and its parameter the column as a list.
    """
    length = len(columns[0]) if columns else 0
    sql = _placeholders(tuple(kinds), length)
    if length > MOST:
        return sql, [list(column) for column in columns]
    return sql, [value for column in columns for value in column]
