"""Convert message rows: ``NewRow`` to INSERT statements, stored values to ``Row`` objects.

Both directions are on the hot path (one append per message, whole histories per load), so
both are tuned; the measurements that chose each trick are next to it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

from hermes_core import NewRow, Row, storage_kit
from hermes_sqlite.codec import dump_tool_calls, load_tool_calls

EMPTY_META = storage_kit.EMPTY_META
ROW_TWIN = storage_kit.ROW_TWIN
load_meta = storage_kit.load_meta
load_parts = storage_kit.load_parts
new_row_values = storage_kit.new_row_values

# Message columns in Row field order (the order of row_params values).
MESSAGE_COLUMNS: tuple[str, ...] = storage_kit.ROW_FIELDS
# What a load selects: every column but the session id, which the caller knows, and the archive
# state, which is known for active rows; loading every row adds STATE_COLUMNS at the end.
STATE_COLUMNS: tuple[str, ...] = ("active", "archived_reason")
LOAD_COLUMNS: tuple[str, ...] = tuple(
    c for c in MESSAGE_COLUMNS if c != "session_id" and c not in STATE_COLUMNS
)
# Picks the LOAD_COLUMNS values out of row_params values.
as_loaded = operator.itemgetter(*(MESSAGE_COLUMNS.index(c) for c in LOAD_COLUMNS))
# The projection order.
_ORDER = operator.attrgetter("position", "id")


def row_params(row: NewRow, row_id: int, session_id: str, now: float) -> tuple[Any, ...]:
    """Build the column values of one new row, in :data:`MESSAGE_COLUMNS` order.

    :param row: the row to insert.
    :param row_id: the id chosen for it.
    :param session_id: the owning session.
    :param now: the creation time used when the row names none.
    :returns: the values.
    """
    tool_calls = dump_tool_calls(row.tool_calls, row_id) if row.tool_calls else None
    values = new_row_values(row, now, tool_calls)
    position = values[0]
    # Into MESSAGE_COLUMNS order: the id and session first, active and no archive reason after
    # display_kind.
    return (row_id, session_id, row_id if position is None else position, *values[1:9], 1, None, *values[9:])


# INSERT statements by which values are NULL. Binding None is the dearest parameter there is:
# Python's sqlite3 first looks for an adapter for it (a failed attribute lookup that formats an
# exception message), about 0.35 µs each, and a typical row has 7-12 of them. Leaving NULL
# columns out of the statement (their default is NULL) saved 3-4 µs per append.
_INSERTS: dict[tuple[bool, ...], tuple[str, operator.itemgetter[Any]]] = {}
_is = operator.is_


def _make_insert(nulls: tuple[bool, ...]) -> tuple[str, operator.itemgetter[Any]]:
    """Build and remember the INSERT for rows whose NULL values are where ``nulls`` says."""
    kept = [index for index, null in enumerate(nulls) if not null]
    columns = ", ".join(MESSAGE_COLUMNS[index] for index in kept)
    sql = f"INSERT INTO messages ({columns}) VALUES ({', '.join('?' * len(kept))})"
    # Every row has at least id, session id, position, role, content and created_at, so the
    # getter always returns a tuple.
    entry = (sql, operator.itemgetter(*kept))
    _INSERTS[nulls] = entry
    return entry


def insert_statement(values: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """Return the INSERT for one row's values, binding only those that are not NULL.

    :param values: what :func:`row_params` returned.
    :returns: the SQL and its parameters.
    """
    nulls = tuple(map(_is, repeat(None), values))
    entry = _INSERTS.get(nulls) or _make_insert(nulls)
    return entry[0], entry[1](values)


class RowAggregate:
    """The shape of the SQL aggregates a :class:`RowBuilder` hands out.

    SQLite makes one per query, calls ``step`` with each row's columns and then ``finalize``.
    """

    __slots__ = ()
    step: Callable[..., None]

    def finalize(self) -> None:
        """Finish the query's aggregate; the rows are in the builder, not in the SQL result."""
        return None


class RowBuilder:
    """Turn stored message values into frozen ``Row`` objects, as fast as Python allows.

    A load runs its columns through :attr:`active` (or :attr:`any_state`), an SQL aggregate
    whose step builds one row, so the values reach Python as call arguments and the whole
    result as a single SQL row. Fetching them as result columns instead costs a GIL release and
    re-acquire per column in Python 3.11's sqlite3 (about 0.1 µs each, 16 per row), and a
    result row per message costs some more: a 1,000-row load took 3.8 ms of CPU fetched as
    columns, 2.6 ms through a scalar SQL function and 2.0 ms through the aggregate. An
    aggregate sees its rows in no promised order, so :meth:`take` sorts them.

    The step functions are closures with their globals bound as defaults: attribute and
    global lookups per row are what is left to save. Rows are built through a twin class
    (see :mod:`hermes_core.storage_kit.rows`).
    """

    def __init__(self) -> None:
        self._session_id = [""]
        self._rows: list[Row] = []
        self.error: Exception | None = None
        self.active, self.any_state = self._aggregates()

    def start(self, session_id: str) -> None:
        """Begin a batch of rows of one session.

        :param session_id: the session the rows belong to.
        """
        self._session_id[0] = session_id
        self._rows.clear()
        self.error = None

    def take(self, *, sort: bool) -> list[Row]:
        """End the batch.

        :param sort: order the rows by ``(position, id)``; otherwise they come in build order.
        :returns: the rows built since :meth:`start`.
        """
        rows = self._rows[:]
        self._rows.clear()
        if sort:
            rows.sort(key=_ORDER)
        return rows

    def from_values(self, values: Iterable[tuple[Any, ...]], session_id: str) -> list[Row]:
        """Build active rows from tuples in :data:`LOAD_COLUMNS` order.

        :param values: the tuples.
        :param session_id: the session they belong to.
        :returns: the rows, in the order of ``values``.
        """
        self.start(session_id)
        step = self.active.step
        for value in values:
            step(*value)
        return self.take(sort=False)

    def _aggregates(self) -> tuple[type[RowAggregate], type[RowAggregate]]:
        """Make the two aggregate classes: active rows, and rows with their archive state."""
        builder, session_id, rows = self, self._session_id, self._rows
        append = rows.append
        twin = ROW_TWIN

        def active_row(
            row_id: int,
            position: int,
            role: str,
            content: str,
            parts: str | None,
            tool_calls: str | None,
            call_id: str | None,
            provider_call_id: str | None,
            tool_name: str | None,
            display_kind: str | None,
            model: str | None,
            reasoning: str | None,
            input_tokens: int | None,
            output_tokens: int | None,
            meta: str | None,
            created_at: float,
            _new: Any = object.__new__,
            _row: type = Row,
            _empty: Any = EMPTY_META,
        ) -> None:
            try:
                if twin is None:
                    append(
                        _make_row_slow(
                            (
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
                            ),
                            session_id[0],
                        )
                    )
                    return
                row = _new(twin)
                row.id = row_id
                row.session_id = session_id[0]
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
                row.meta = load_meta(meta) if meta else _empty
                row.created_at = created_at
                row.__class__ = _row
                append(row)
            except Exception as exc:
                # SQLite would only say "user-defined aggregate's 'step' method raised error".
                builder.error = exc
                raise

        def any_row(*values: Any) -> None:
            active_row(*values[:-2])
            active, reason = values[-2:]
            if active != 1 or reason is not None:
                # Still being built, seen by nobody: what Row.__init__ itself does for a frozen class.
                row = rows[-1]
                object.__setattr__(row, "active", active == 1)
                object.__setattr__(row, "archived_reason", reason)

        class Active(RowAggregate):
            """Builds active rows from :data:`LOAD_COLUMNS` values."""

            __slots__ = ()
            step = staticmethod(active_row)

        class AnyState(RowAggregate):
            """Builds rows from :data:`LOAD_COLUMNS` + :data:`STATE_COLUMNS` values."""

            __slots__ = ()
            step = staticmethod(any_row)

        return Active, AnyState


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
