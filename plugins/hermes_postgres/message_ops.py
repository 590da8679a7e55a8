"""Message rows: insert, load, soft-archive and meta updates.

Rows are never deleted; archiving sets ``active = false`` and keeps the first reason. An append
is one statement (so one implicit transaction and one round trip): it bumps the session's
``updated_at`` at most once a second, fences on the writer lease when this storage holds it,
checks that the session is stored, takes ids from the table's sequence and inserts every row.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from hermes_core import NewRow, RecordClaim, Row, SessionRecord, StorageError, storage_kit
from hermes_postgres import inline, session_ops
from hermes_postgres.codec import (
    INSERT_COLUMNS,
    INSERT_TYPES,
    LOAD_COLUMNS,
    fold,
    row_from_values,
    row_values,
)
from hermes_postgres.lease_ops import FENCE_CTE, LEASE_NEW_CTE
from hermes_postgres.record_single import COLUMNS as RECORD_COLUMNS
from hermes_postgres.record_single import NOW as RECORD_NOW

ACTIVITY_INTERVAL_S = 1
Fence = tuple[str, int] | None  # (owner, epoch) of the lease this storage holds, if any

_SEQUENCE = "'hermes_messages_id_seq'"  # the identity column's sequence (see schema)


def _rows_cte(unnest: Sequence[str]) -> str:
    """The rows to insert, from one array per column (see :mod:`hermes_postgres.inline`)."""
    return (
        f"r AS (SELECT nextval({_SEQUENCE}) AS id, u.* FROM unnest({', '.join(unnest)}) WITH ORDINALITY "
        f"AS u({', '.join(INSERT_COLUMNS)}, ord))"
    )


_INSERT_TARGET = f"INSERT INTO hermes_messages (id, session_id, {', '.join(INSERT_COLUMNS)})"
_INSERT_SELECT = ", ".join(
    "coalesce(r.position, r.id)" if c == "position" else f"r.{c}" for c in INSERT_COLUMNS
)


# The append is one statement with numbered parameters, each value sent once: $1 the session id,
# $2 the time, $3 and $4 the lease's owner and epoch when fenced, then the rows' values (one
# parameter a column for one row, the common case; else one array a column).
def _one_select(first: int) -> str:
    return ", ".join(
        f"coalesce(${i}::{k}, n.id)" if c == "position" else f"${i}::{k}"
        for i, (c, k) in enumerate(zip(INSERT_COLUMNS, INSERT_TYPES, strict=True), start=first)
    )


def _many_rows(first: int) -> str:
    arrays = ", ".join(f"${i}::{k}[]" for i, k in enumerate(INSERT_TYPES, start=first))
    return (
        f"r AS (SELECT nextval({_SEQUENCE}) AS id, u.* FROM unnest({arrays}) WITH ORDINALITY "
        f"AS u({', '.join(INSERT_COLUMNS)}, ord))"
    )


# The lease row, share-locked so that a takeover waits for this write to commit (and a takeover
# that committed first is seen: the lock reads the newest version of the row).
_FENCE_CTE = (
    "l AS (SELECT 1 FROM hermes_leases WHERE session_id = $1 AND owner = $3 AND epoch = $4::bigint FOR SHARE)"
)
# updated_at moves when it is more than a second behind (listing order is by the second).
_BUMP = (
    "s AS (UPDATE hermes_sessions SET updated_at = $2::float8 WHERE id = $1 "
    f"AND NOT (updated_at <= $2::float8 AND updated_at > $2::float8 - {ACTIVITY_INTERVAL_S}){{fence}} "
    "RETURNING 1)"
)
# Rows are written only for a stored session. No foreign key does this (its check locks the
# session row, a write per append): sessions are never deleted, so a session seen here stays.
_SESSION_EXISTS = "EXISTS (SELECT 1 FROM hermes_sessions WHERE id = $1)"


def _columns(values: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Turn per-row values into one list per column (the unnest arrays)."""
    return [list(column) for column in zip(*values, strict=True)]


def _insert_rows_sql(ctes: list[str], first: int, one: bool, where: str) -> str:
    """The append's INSERT after ``ctes``: the rows' values from parameter ``first`` on (one row,
    or one array a column), inserted only where ``where`` holds."""
    if one:
        ctes = [*ctes, f"n AS (SELECT nextval({_SEQUENCE}) AS id)"]
        return (
            f"WITH {', '.join(ctes)} {_INSERT_TARGET} SELECT n.id, $1, {_one_select(first)} "
            f"FROM n{where} RETURNING id"
        )
    ctes = [*ctes, _many_rows(first)]
    return (
        f"WITH {', '.join(ctes)} {_INSERT_TARGET} SELECT r.id, $1, {_INSERT_SELECT} "
        f"FROM r{where} ORDER BY r.ord RETURNING id"
    )


def append_sql(fenced: bool, one: bool) -> str:
    """Return the one-statement append: with or without the lease fence, one row or many."""
    ctes = [_FENCE_CTE] if fenced else []
    where = f" WHERE {_SESSION_EXISTS}" + (" AND EXISTS (SELECT 1 FROM l)" if fenced else "")
    ctes.append(_BUMP.format(fence=" AND EXISTS (SELECT 1 FROM l)" if fenced else ""))
    first = 5 if fenced else 3
    return _insert_rows_sql(ctes, first, one, where)


APPEND_SQL = {(fenced, one): append_sql(fenced, one) for fenced in (False, True) for one in (False, True)}

_FLOAT_COLUMNS = frozenset({"created_at", "updated_at"})


@cache
def append_update_sql(fenced: bool, one: bool, columns: tuple[str, ...]) -> str:
    """Return the one-statement append that also sets the session ``columns`` (their values follow
    the rows' parameters, in order): the session's update replaces the activity bump, and the
    rows are inserted only when it changed the session (stored, and the fence let it through)."""
    ctes = [_FENCE_CTE] if fenced else []
    first = 5 if fenced else 3
    after = first + len(INSERT_COLUMNS)
    sets = ", ".join(
        f"{c} = ${after + i}::{'float8' if c in _FLOAT_COLUMNS else 'text'}" for i, c in enumerate(columns)
    )
    fence = " AND EXISTS (SELECT 1 FROM l)" if fenced else ""
    update = f"UPDATE hermes_sessions SET updated_at = $2::float8, {sets} WHERE id = $1{fence} RETURNING 1"
    ctes.append(f"s AS ({update})")
    where = " WHERE EXISTS (SELECT 1 FROM s)"
    return _insert_rows_sql(ctes, first, one, where)


def append_params(session_id: str, rows: Sequence[NewRow], fence: Fence, now: float) -> list[Any]:
    """Return the parameters of ``APPEND_SQL[fence is not None, len(rows) == 1]``.

    :raises TypeError: for a value no column can hold.
    """
    params: list[Any] = [session_id, now] if fence is None else [session_id, now, *fence]
    if len(rows) == 1:
        params += row_values(rows[0], now)
    else:
        params += _columns([row_values(row, now) for row in rows])
    return params


async def append_rows(
    conn: Any, session_id: str, rows: Sequence[NewRow], fence: Fence, fields: Mapping[str, Any] | None = None
) -> list[int]:
    """Append rows in one statement on an autocommit connection; return their ids in order.

    ``fields`` (checked already): session columns set by the same statement.
    Empty when nothing was written: the session is not stored, or the fence refused the rows.
    """
    from psycopg import AsyncRawCursor

    params = append_params(session_id, rows, fence, time.time())
    one = len(rows) == 1
    if fields:
        values = dict(fields)
        if "title" in values:
            values["title_folded"] = fold(values["title"])
        columns = tuple(sorted(values))
        params += [storage_kit.session_value(c, values[c]) for c in columns]
        sql = append_update_sql(fence is not None, one, columns)
    else:
        sql = APPEND_SQL[fence is not None, one]
    async with AsyncRawCursor(conn) as cur:
        await cur.execute(sql, params)
        return sorted(row[0] for row in await cur.fetchall())


async def insert_rows(cur: Any, session_id: str, rows: Sequence[NewRow], now: float) -> list[int]:
    """Insert rows inside the caller's transaction (the session is known to exist)."""
    if not rows:
        return []
    unnest, params = inline.arrays(INSERT_TYPES, _columns([row_values(row, now) for row in rows]))
    await cur.execute(_insert_sql(unnest), [*params, session_id])
    return sorted(row[0] for row in await cur.fetchall())


@cache
def _insert_sql(unnest: tuple[str, ...]) -> str:
    return (
        f"WITH {_rows_cte(unnest)} {_INSERT_TARGET} SELECT r.id, %s, {_INSERT_SELECT} FROM r ORDER BY r.ord "
        "RETURNING id"
    )


@cache
def create_sql(fenced: bool, unnest: tuple[str, ...]) -> str:
    """Return one statement (one round trip, one implicit transaction) that inserts a session and
    its first rows, fenced on the writer lease when this storage holds it. Nothing is written when
    the id is taken or the lease moved; it answers how many sessions it inserted (0 or 1) and the
    new rows' ids."""
    fence = f"{FENCE_CTE}, " if fenced else ""
    where = " WHERE EXISTS (SELECT 1 FROM l)" if fenced else ""
    return (
        f"WITH {fence}s AS ({session_ops.INSERT_SELECT}{where} ON CONFLICT (id) DO NOTHING RETURNING id), "
        f"{_rows_cte(unnest)}, m AS ({_INSERT_TARGET} SELECT r.id, s.id, {_INSERT_SELECT} "
        "FROM r CROSS JOIN s ORDER BY r.ord RETURNING id) "
        "SELECT (SELECT count(*) FROM s), ARRAY(SELECT id FROM m ORDER BY id)"
    )


# A new session's claimed records (parameters: one array each of namespaces, keys and owners):
# stored with the session only when none of the keys holds a live record, an expired one being
# replaced. Only keys nobody can hold yet are claimed this way (``RecordClaim``).
_CLAIM_CONFLICT = (
    "ON CONFLICT (namespace, key) DO UPDATE SET data = EXCLUDED.data, scope = EXCLUDED.scope, "
    "owner = EXCLUDED.owner, epoch = 1, version = hr.version + 1, created_at = EXCLUDED.created_at, "
    "updated_at = EXCLUDED.updated_at, expires_at = NULL "
    "WHERE hr.expires_at IS NOT NULL AND hr.expires_at <= EXCLUDED.created_at RETURNING 1)"
)
# One claim (parameters: namespace, key, owner): its conflict rule alone makes it all or nothing.
_CLAIM_CTE = (
    f"c AS (INSERT INTO hermes_records AS hr ({RECORD_COLUMNS}) "
    f"SELECT %s, %s, '{{}}', '', %s, 1, 1, t.now, t.now, NULL FROM (SELECT {RECORD_NOW} AS now) t "
    f"WHERE EXISTS (SELECT 1 FROM l) {_CLAIM_CONFLICT}"
)
# Several (parameters: one array each of namespaces, keys and owners): stored only when none of
# the keys holds a live record.
_CLAIMS_CTE = (
    "x AS (SELECT * FROM unnest({ns}, {keys}, {owners}) AS x(ns, k, o)), "
    f"t AS (SELECT {RECORD_NOW} AS now), "
    f"c AS (INSERT INTO hermes_records AS hr ({RECORD_COLUMNS}) "
    "SELECT x.ns, x.k, '{{}}', '', x.o, 1, 1, t.now, t.now, NULL FROM x CROSS JOIN t "
    "WHERE EXISTS (SELECT 1 FROM l) AND NOT EXISTS (SELECT 1 FROM hermes_records e "
    "JOIN x y ON e.namespace = y.ns AND e.key = y.k CROSS JOIN t u "
    "WHERE e.expires_at IS NULL OR e.expires_at > u.now) "
) + _CLAIM_CONFLICT.replace("{", "{{").replace("}", "}}")


@cache
def leased_create_sql(unnest: tuple[str, ...], claims: tuple[str, ...] = ()) -> str:
    """Return one statement that takes a new session's writer lease and inserts the session, its
    first rows and its claimed records (``claims``: ``("one",)`` for one, given as three scalar
    parameters, else the three array expressions of several); it
    answers the lease's epoch (None: not taken, nothing written), how many sessions it inserted,
    the new rows' ids and how many records it claimed."""
    claimed, counted, claim_count = "", "", "0"
    if claims == ("one",):
        claimed = ", " + _CLAIM_CTE
    elif claims:
        ns, keys, owners = claims
        claimed = ", " + _CLAIMS_CTE.format(ns=ns, keys=keys, owners=owners)
    if claims:
        counted, claim_count = " AND (SELECT count(*) FROM c) = %s", "(SELECT count(*) FROM c)"
    return (
        f"WITH {LEASE_NEW_CTE}{claimed}, s AS ({session_ops.INSERT_SELECT} WHERE EXISTS (SELECT 1 FROM l)"
        f"{counted} ON CONFLICT (id) DO NOTHING RETURNING id), "
        f"{_rows_cte(unnest)}, m AS ({_INSERT_TARGET} SELECT r.id, s.id, {_INSERT_SELECT} "
        "FROM r CROSS JOIN s ORDER BY r.ord RETURNING id) "
        "SELECT (SELECT epoch FROM l), (SELECT count(*) FROM s), ARRAY(SELECT id FROM m ORDER BY id), "
        f"{claim_count}"
    )


async def create_leased_session(
    cur: Any,
    record: SessionRecord,
    rows: Sequence[NewRow],
    now: float,
    owner: str,
    ttl_s: float,
    claims: Sequence[RecordClaim] = (),
) -> tuple[int, list[int]] | None:
    """Take a new session's lease and insert it with its rows (and claimed records) in one
    statement; return the lease's epoch and the row ids, or None (nothing written) when the lease
    is held or the id stored.

    :raises StorageError: a claimed key holds a live record (nothing of the session is written).
    """
    values = [row_values(row, now) for row in rows]
    unnest, columns = inline.arrays(INSERT_TYPES, _columns(values))
    params: list[Any] = [record.id, owner, float(ttl_s), record.id]
    claim_sql: tuple[str, ...] = ()
    if len(claims) == 1:
        claim_sql = ("one",)
        params += [claims[0].namespace, claims[0].key, claims[0].owner]
    elif claims:
        claim_sql, claim_params = inline.arrays(
            ("text", "text", "text"),
            [[c.namespace for c in claims], [c.key for c in claims], [c.owner for c in claims]],
        )
        params += claim_params
    params += session_ops.insert_params(record, now)
    if claims:
        params.append(len(claims))
    params += columns
    await cur.execute(leased_create_sql(unnest, claim_sql), params)
    found = await cur.fetchone()
    if found[0] is not None and claims and found[3] != len(claims):
        taken = ", ".join(f"{c.namespace}/{c.key}" for c in claims)
        raise StorageError(f"a record the new session {record.id} claims is held already ({taken})")
    if found[0] is None or not found[1]:
        return None
    return int(found[0]), [int(i) for i in found[2]]


async def create_session(
    cur: Any, record: SessionRecord, rows: Sequence[NewRow], now: float, fence: Fence
) -> list[int] | None:
    """Insert a session and its rows in one statement; None (nothing written) when the id is taken
    or the fence refused it."""
    values = [row_values(row, now) for row in rows]
    unnest, columns = inline.arrays(INSERT_TYPES, _columns(values))  # no rows: empty arrays
    params: list[Any] = [record.id, *fence] if fence is not None else []
    params += session_ops.insert_params(record, now)
    params += columns
    await cur.execute(create_sql(fence is not None, unnest), params)
    found = await cur.fetchone()
    return [int(i) for i in found[1]] if found[0] else None


_LOAD = f"SELECT {', '.join(LOAD_COLUMNS)} FROM hermes_messages WHERE session_id = %s"
LOAD_ACTIVE = f"{_LOAD} AND active ORDER BY position, id"
LOAD_ALL = f"{_LOAD} ORDER BY position, id"


async def load_rows(cur: Any, session_id: str, include_archived: bool) -> list[Row]:
    """Return a session's rows ordered by ``(position, id)``."""
    await cur.execute(LOAD_ALL if include_archived else LOAD_ACTIVE, (session_id,))
    return [row_from_values(session_id, values) for values in await cur.fetchall()]


async def archive_rows(cur: Any, session_id: str, row_ids: Sequence[int], reason: str | None) -> None:
    """Soft-archive rows of one session inside the caller's transaction.

    :raises StorageError: when an id is not a row of this session.
    """
    ids = list(dict.fromkeys(int(i) for i in row_ids))
    await cur.execute(
        "UPDATE hermes_messages SET archived_reason = CASE WHEN active THEN %s ELSE archived_reason END, "
        "active = false WHERE session_id = %s AND id = ANY(%s::bigint[])",
        (reason, session_id, ids),
    )
    if cur.rowcount != len(ids):
        raise StorageError(f"cannot archive rows: some of them are not rows of session {session_id}")


async def row_session(cur: Any, row_id: int) -> tuple[str, Any]:
    """Lock one row for a meta update inside the caller's transaction; return its session and meta.

    :raises StorageError: when there is no such row.
    """
    await cur.execute("SELECT session_id, meta FROM hermes_messages WHERE id = %s FOR UPDATE", (row_id,))
    found = await cur.fetchone()
    if found is None:
        raise StorageError(f"no message row with id {row_id}")
    return str(found[0]), found[1]


async def update_row_meta(cur: Any, row_id: int, stored: Any, meta: Mapping[str, Any]) -> None:
    """Merge keys into the ``meta`` (as stored, see :func:`row_session`) of a locked row."""
    merged = storage_kit.load_mapping(stored)
    merged.update(meta)
    await cur.execute(
        "UPDATE hermes_messages SET meta = %s WHERE id = %s",
        (storage_kit.dump_json(merged) if merged else None, row_id),
    )
