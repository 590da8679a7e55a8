"""Durable records in the ``records`` table (docs/reference/core.md#records).

Every function here runs as a job of the database thread (on it, or inline on the loop) with its
connection; each mutating one is a ``BEGIN IMMEDIATE`` transaction, so a check and the write it
guards are one step. An expired record counts as absent everywhere and is deleted when a write
meets it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from hermes_core import (
    Claim,
    Expect,
    RecordChange,
    RecordClaim,
    RecordPage,
    StorageError,
    StoredRecord,
    storage_kit,
)
from hermes_sqlite.schema import write_transaction

COLUMNS = "namespace, key, data, scope, owner, epoch, version, created_at, updated_at, expires_at"
_GET = f"SELECT {COLUMNS} FROM records WHERE namespace = ? AND key = ?"
_UNEXPIRED = "(expires_at IS NULL OR expires_at > ?)"


def _record(row: tuple[Any, ...]) -> StoredRecord:
    return StoredRecord(
        row[0], row[1], row[2], row[3], row[4], int(row[5]), int(row[6]), row[7], row[8], row[9]
    )


def _expiry(now: float, ttl_s: float | None) -> float | None:
    return None if ttl_s is None else now + ttl_s


def _current(conn: sqlite3.Connection, namespace: str, key: str, now: float) -> StoredRecord | None:
    """The record, or None; an expired one is deleted (inside the caller's transaction)."""
    row = conn.execute(_GET, (namespace, key)).fetchone()
    if row is None:
        return None
    record = _record(row)
    if record.expires_at is not None and record.expires_at <= now:
        conn.execute("DELETE FROM records WHERE namespace = ? AND key = ?", (namespace, key))
        return None
    return record


_REPLACE = f"INSERT OR REPLACE INTO records ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _values(record: StoredRecord) -> tuple[Any, ...]:
    return (
        record.namespace,
        record.key,
        record.data,
        record.scope,
        record.owner,
        record.epoch,
        record.version,
        record.created_at,
        record.updated_at,
        record.expires_at,
    )


def _store(conn: sqlite3.Connection, record: StoredRecord) -> StoredRecord:
    conn.execute(_REPLACE, _values(record))
    return record


def claim_absent(conn: sqlite3.Connection, claims: Sequence[RecordClaim], now: float) -> None:
    """Store each claim's record for its owner, inside the caller's transaction (a new session's
    first write, see ``LeasedCreate``); raise ``StorageError`` when a live record is there."""
    for claim in claims:
        old = _current(conn, claim.namespace, claim.key, now)
        if old is not None:
            raise StorageError(f"the record {claim.namespace}/{claim.key} is held by {old.owner}")
        _store(conn, StoredRecord(claim.namespace, claim.key, "{}", "", claim.owner, 1, 1, now, now, None))


def get(conn: sqlite3.Connection, namespace: str, key: str) -> StoredRecord | None:
    """Return the unexpired record, or None."""
    row = conn.execute(f"{_GET} AND {_UNEXPIRED}", (namespace, key, time.time())).fetchone()
    return _record(row) if row else None


def put(
    conn: sqlite3.Connection,
    namespace: str,
    key: str,
    data: str,
    scope: str,
    ttl_s: float | None,
    expect: Expect | None,
) -> StoredRecord | None:
    """Insert or replace the value (see ``RecordStore.put_record``)."""
    with write_transaction(conn):
        now = time.time()
        old = _current(conn, namespace, key, now)
        if expect is not None and (old is None or not expect.matches(old)):
            return None
        if old is None:
            return _store(
                conn, StoredRecord(namespace, key, data, scope, None, 0, 1, now, now, _expiry(now, ttl_s))
            )
        return _store(
            conn,
            StoredRecord(
                namespace,
                key,
                data,
                scope,
                old.owner,
                old.epoch,
                old.version + 1,
                old.created_at,
                now,
                _expiry(now, ttl_s),
            ),
        )


def update(
    conn: sqlite3.Connection, namespace: str, keys: Sequence[str], change: RecordChange
) -> list[StoredRecord] | None:
    """Write what ``change`` makes of several records' values (see ``RecordUpdates``): one
    transaction, so the write lock keeps every other writer of the file out between the read and
    the write; one statement reads them all and one writes them all."""
    with write_transaction(conn):
        now = time.time()
        marks = ", ".join("?" * len(keys))
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM records WHERE namespace = ? AND key IN ({marks})", (namespace, *keys)
        ).fetchall()
        # An expired record counts as absent: the write below replaces it.
        found = {r.key: r for r in map(_record, rows) if r.expires_at is None or r.expires_at > now}
        olds = [found.get(key) for key in keys]
        made = change([None if old is None else old.data for old in olds])
        if made is None:
            return None
        written: list[StoredRecord] = []
        for key, old, data in zip(keys, olds, made, strict=True):
            if old is None:
                written.append(StoredRecord(namespace, key, data, "", None, 0, 1, now, now, None))
            else:
                written.append(
                    StoredRecord(
                        namespace,
                        key,
                        data,
                        old.scope,
                        old.owner,
                        old.epoch,
                        old.version + 1,
                        old.created_at,
                        now,
                        old.expires_at,
                    )
                )
        # A record already there changes in place (only its activity index moves); a new one, or
        # one expired, is replaced whole.
        pairs = list(zip(written, olds, strict=True))
        changed = [(r.data, r.version, now, namespace, r.key) for r, old in pairs if old is not None]
        if changed:  # a statement run on no rows still costs its preparation and a step
            conn.executemany(
                "UPDATE records SET data = ?, version = ?, updated_at = ? WHERE namespace = ? AND key = ?",
                changed,
            )
        added = [_values(r) for r, old in pairs if old is None]
        if added:
            conn.executemany(_REPLACE, added)
        return written


def insert(
    conn: sqlite3.Connection, namespace: str, key: str, data: str, scope: str, ttl_s: float | None
) -> Claim:
    """Add the record when absent or expired, as a claim released at once leaves it (see
    ``RecordInserts.insert_record``); otherwise hand back the one there."""
    with write_transaction(conn):
        now = time.time()
        old = _current(conn, namespace, key, now)
        if old is not None:
            return Claim(False, old)
        record = StoredRecord(namespace, key, data, scope, None, 1, 2, now, now, _expiry(now, ttl_s))
        return Claim(True, _store(conn, record))


def claim(
    conn: sqlite3.Connection,
    namespace: str,
    key: str,
    data: str,
    owner: str,
    scope: str,
    ttl_s: float | None,
    stale_after_s: float | None,
) -> Claim:
    """Take the record when absent, expired or held and stale (see ``RecordStore.claim_record``)."""
    with write_transaction(conn):
        now = time.time()
        old = _current(conn, namespace, key, now)
        if old is None:
            epoch, version = 1, 1
        elif old.owner is not None and stale_after_s is not None and old.updated_at < now - stale_after_s:
            epoch, version = old.epoch + 1, old.version + 1
        else:
            return Claim(False, old)
        record = StoredRecord(
            namespace, key, data, scope, owner, epoch, version, now, now, _expiry(now, ttl_s)
        )
        return Claim(True, _store(conn, record))


def touch(
    conn: sqlite3.Connection, namespace: str, key: str, expect: Expect | None, ttl_s: float | None
) -> StoredRecord | None:
    """Mark the record alive (see ``RecordStore.touch_record``)."""
    with write_transaction(conn):
        now = time.time()
        old = _current(conn, namespace, key, now)
        if old is None or (expect is not None and not expect.matches(old)):
            return None
        expires = old.expires_at if ttl_s is None else now + ttl_s
        conn.execute(
            "UPDATE records SET updated_at = ?, expires_at = ? WHERE namespace = ? AND key = ?",
            (now, expires, namespace, key),
        )
        return StoredRecord(
            namespace,
            key,
            old.data,
            old.scope,
            old.owner,
            old.epoch,
            old.version,
            old.created_at,
            now,
            expires,
        )


def release(
    conn: sqlite3.Connection,
    namespace: str,
    key: str,
    expect: Expect,
    data: str | None,
    ttl_s: float | None,
) -> StoredRecord | None:
    """Let go of a claim (see ``RecordStore.release_record``)."""
    with write_transaction(conn):
        now = time.time()
        old = _current(conn, namespace, key, now)
        if old is None or not expect.matches(old):
            return None
        record = StoredRecord(
            namespace,
            key,
            old.data if data is None else data,
            old.scope,
            None,
            old.epoch,
            old.version + 1,
            old.created_at,
            now,
            _expiry(now, ttl_s),
        )
        return _store(conn, record)


def delete(conn: sqlite3.Connection, namespace: str, key: str, expect: Expect | None) -> bool:
    """Delete the record (see ``RecordStore.delete_record``)."""
    with write_transaction(conn):
        old = _current(conn, namespace, key, time.time())
        if old is None or (expect is not None and not expect.matches(old)):
            return False
        conn.execute("DELETE FROM records WHERE namespace = ? AND key = ?", (namespace, key))
        return True


def _where(namespace: str, scope: str | None, now: float) -> tuple[str, list[Any]]:
    where = f"namespace = ? AND {_UNEXPIRED}"
    params: list[Any] = [namespace, now]
    if scope is not None:
        where += " AND scope = ?"
        params.append(scope)
    return where, params


def listing(
    conn: sqlite3.Connection,
    namespace: str,
    scope: str | None,
    owner: str | None,
    held: bool | None,
    limit: int,
    cursor: str | None,
) -> RecordPage:
    """List records, newest ``updated_at`` first (see ``RecordStore.list_records``)."""
    where, params = _where(namespace, scope, time.time())
    if owner is not None:
        where += " AND owner = ?"
        params.append(owner)
    if held is not None:
        where += " AND owner IS NOT NULL" if held else " AND owner IS NULL"
    after = storage_kit.read_record_cursor(cursor)
    if after is not None:
        where += " AND (updated_at < ? OR (updated_at = ? AND key < ?))"
        params += [after[0], after[0], after[1]]
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM records WHERE {where} ORDER BY updated_at DESC, key DESC LIMIT ?",
        (*params, limit + 1),
    ).fetchall()
    records = [_record(r) for r in rows[:limit]]
    return RecordPage(records, storage_kit.record_page_cursor(records, limit, len(rows) > limit))


def count(conn: sqlite3.Connection, namespace: str, scope: str | None) -> int:
    """Count unexpired records."""
    where, params = _where(namespace, scope, time.time())
    return int(conn.execute(f"SELECT count(*) FROM records WHERE {where}", params).fetchone()[0])


def evict(conn: sqlite3.Connection, namespace: str, keep: int, scope: str | None) -> int:
    """Delete the unexpired records beyond the ``keep`` newest."""
    with write_transaction(conn):
        where, params = _where(namespace, scope, time.time())
        cur = conn.execute(
            "DELETE FROM records WHERE rowid IN (SELECT rowid FROM records "
            f"WHERE {where} ORDER BY updated_at DESC, key DESC LIMIT -1 OFFSET ?)",
            (*params, keep),
        )
        return int(cur.rowcount)


def sweep(conn: sqlite3.Connection, namespace: str | None) -> int:
    """Delete expired records."""
    with write_transaction(conn):
        now = time.time()
        if namespace is None:
            cur = conn.execute("DELETE FROM records WHERE expires_at <= ?", (now,))
        else:
            cur = conn.execute(
                "DELETE FROM records WHERE namespace = ? AND expires_at <= ?", (namespace, now)
            )
        return int(cur.rowcount)
