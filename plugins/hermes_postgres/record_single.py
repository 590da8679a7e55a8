"""Record writes that are one statement in autocommit: one round trip instead of a transaction's
four or five (``BEGIN``, the locking read, the write, ``COMMIT``).

PostgreSQL decides these on the row itself: an ``UPDATE`` re-checks its ``WHERE`` on the newest
version of a row another transaction changed meanwhile (READ COMMITTED), so a compare-and-set
here is as strict as the locked read-then-write of :mod:`hermes_postgres.record_ops`, and an
upsert's conflict branch sees the row as it is. An expired record is what it is everywhere: a
put replaces it as if absent (owner, epoch and version start again); an expected one matches
nothing.
"""

from __future__ import annotations

from typing import Any

from hermes_core import Expect, StoredRecord

NOW = "extract(epoch FROM clock_timestamp())::double precision"
COLUMNS = "namespace, key, data, scope, owner, epoch, version, created_at, updated_at, expires_at"
_RETURNING = ", ".join(f"r.{column}" for column in COLUMNS.split(", "))

# An existing row is expired when its expiry is not after the new write's time.
_EXPIRED = "(r.expires_at IS NOT NULL AND r.expires_at <= EXCLUDED.updated_at)"
PUT = (
    f"INSERT INTO hermes_records AS r ({COLUMNS}) "
    "SELECT %s, %s, %s, %s, NULL, 0, 1, t.now, t.now, t.now + %s::double precision "
    f"FROM (SELECT {NOW} AS now) t "
    "ON CONFLICT (namespace, key) DO UPDATE SET data = EXCLUDED.data, scope = EXCLUDED.scope, "
    f"owner = CASE WHEN {_EXPIRED} THEN NULL ELSE r.owner END, "
    f"epoch = CASE WHEN {_EXPIRED} THEN 0 ELSE r.epoch END, "
    f"version = CASE WHEN {_EXPIRED} THEN 1 ELSE r.version + 1 END, "
    f"created_at = CASE WHEN {_EXPIRED} THEN EXCLUDED.created_at ELSE r.created_at END, "
    "updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at "
    f"RETURNING {_RETURNING}"
)

# Add a record where none is, as a claim let go at once leaves it (no owner, epoch 1, version 2);
# an expired one in the way is replaced whole, an unexpired one left alone (no row comes back).
INSERT = (
    f"INSERT INTO hermes_records AS r ({COLUMNS}) "
    "SELECT %s, %s, %s, %s, NULL, 1, 2, t.now, t.now, t.now + %s::double precision "
    f"FROM (SELECT {NOW} AS now) t "
    "ON CONFLICT (namespace, key) DO UPDATE SET data = EXCLUDED.data, scope = EXCLUDED.scope, "
    "owner = NULL, epoch = 1, version = 2, created_at = EXCLUDED.created_at, "
    "updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at "
    f"WHERE {_EXPIRED} RETURNING {_RETURNING}"
)


def _expected(expect: Expect) -> tuple[str, list[Any]]:
    """The SQL condition of ``expect`` on row ``r`` and its parameters."""
    where, params = "", []
    for column, value in (("owner", expect.owner), ("epoch", expect.epoch), ("version", expect.version)):
        if value is not None:
            where += f" AND r.{column} = %s"
            params.append(value)
    if expect.held is not None:
        where += " AND r.owner IS NOT NULL" if expect.held else " AND r.owner IS NULL"
    return where, params


def _update(sets: str, expect: Expect) -> tuple[str, list[Any]]:
    where, params = _expected(expect)
    sql = (
        f"UPDATE hermes_records AS r SET {sets} FROM (SELECT {NOW} AS now) t "
        "WHERE r.namespace = %s AND r.key = %s AND (r.expires_at IS NULL OR r.expires_at > t.now)"
        f"{where} RETURNING {_RETURNING}"
    )
    return sql, params


def put_expected(expect: Expect) -> tuple[str, list[Any]]:
    """A put that writes only over an unexpired record meeting ``expect``: SQL, and the
    parameters after ``(data, scope, ttl_s, namespace, key)``."""
    return _update(
        "data = %s, scope = %s, version = r.version + 1, updated_at = t.now, "
        "expires_at = t.now + %s::double precision",
        expect,
    )


def release(expect: Expect) -> tuple[str, list[Any]]:
    """A release (owner none, epoch kept) of an unexpired record meeting ``expect``: SQL, and the
    parameters after ``(data or None to keep it, ttl_s, namespace, key)``."""
    return _update(
        "data = coalesce(%s::text, r.data), owner = NULL, version = r.version + 1, updated_at = t.now, "
        "expires_at = t.now + %s::double precision",
        expect,
    )


def record(row: Any) -> StoredRecord:
    """The record of a row of :data:`COLUMNS`."""
    return StoredRecord(
        str(row[0]),
        str(row[1]),
        str(row[2]),
        str(row[3]),
        row[4],
        int(row[5]),
        int(row[6]),
        float(row[7]),
        float(row[8]),
        None if row[9] is None else float(row[9]),
    )


async def put(
    cur: Any, namespace: str, key: str, data: str, scope: str, ttl_s: float | None, expect: Expect | None
) -> StoredRecord | None:
    """Write the record in one statement; None when ``expect`` was given and did not match."""
    if expect is None:
        await cur.execute(PUT, (namespace, key, data, scope, ttl_s))
    else:
        sql, params = put_expected(expect)
        await cur.execute(sql, (data, scope, ttl_s, namespace, key, *params))
    row = await cur.fetchone()
    return None if row is None else record(row)


async def insert(
    cur: Any, namespace: str, key: str, data: str, scope: str, ttl_s: float | None
) -> StoredRecord | None:
    """Add the record in one statement; None when an unexpired record was in the way."""
    await cur.execute(INSERT, (namespace, key, data, scope, ttl_s))
    row = await cur.fetchone()
    return None if row is None else record(row)


async def release_one(
    cur: Any, namespace: str, key: str, expect: Expect, data: str | None, ttl_s: float | None
) -> StoredRecord | None:
    """Release the claim in one statement; None when the record is absent, expired or not as
    expected."""
    sql, params = release(expect)
    await cur.execute(sql, (data, ttl_s, namespace, key, *params))
    row = await cur.fetchone()
    return None if row is None else record(row)
