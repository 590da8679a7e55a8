"""Durable records in ``hermes_records``, shared by every instance on the database
(docs/reference/core.md#records).

Times are the database server's (``clock_timestamp()``), like the leases', so instances whose
clocks disagree still agree on what expired and what is stale. A conditional write locks the row
(``FOR UPDATE``) and decides with the same rules as the other backends; a record that does not
exist yet is inserted with ``ON CONFLICT DO NOTHING`` and the step is tried again when another
instance inserted it first. A put and a release are single statements instead
(:mod:`hermes_postgres.record_single`).
"""

from __future__ import annotations

from typing import Any

from hermes_core import Claim, Expect, RecordPage, StorageError, StoredRecord, storage_kit
from hermes_postgres import record_single
from hermes_postgres.record_single import COLUMNS
from hermes_postgres.record_single import record as _record

NOW = "extract(epoch FROM clock_timestamp())"
_UNEXPIRED = f"(expires_at IS NULL OR expires_at > {NOW})"
_TRIES = 3


def _expiry(now: float, ttl_s: float | None) -> float | None:
    return None if ttl_s is None else now + ttl_s


async def _locked(cur: Any, namespace: str, key: str) -> tuple[float, StoredRecord | None]:
    """Inside a transaction: the server's now and the unexpired record, locked; an expired one
    is deleted."""
    await cur.execute(
        f"SELECT {NOW}, {COLUMNS} FROM hermes_records WHERE namespace = %s AND key = %s FOR UPDATE",
        (namespace, key),
    )
    row = await cur.fetchone()
    if row is None:
        await cur.execute(f"SELECT {NOW}")
        found = await cur.fetchone()
        return float(found[0]), None
    now = float(row[0])
    record = _record(row[1:])
    if record.expires_at is not None and record.expires_at <= now:
        await cur.execute("DELETE FROM hermes_records WHERE namespace = %s AND key = %s", (namespace, key))
        return now, None
    return now, record


async def _insert(cur: Any, record: StoredRecord) -> bool:
    await cur.execute(
        f"INSERT INTO hermes_records ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING",
        _params(record),
    )
    return bool(cur.rowcount == 1)


async def _update(cur: Any, record: StoredRecord) -> StoredRecord:
    await cur.execute(
        "UPDATE hermes_records SET data = %s, scope = %s, owner = %s, epoch = %s, version = %s, "
        "created_at = %s, updated_at = %s, expires_at = %s WHERE namespace = %s AND key = %s",
        (*_params(record)[2:], record.namespace, record.key),
    )
    return record


def _params(record: StoredRecord) -> tuple[Any, ...]:
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


class RecordOps:
    """The record statements, run through a ``transaction()`` factory of the storage (and
    ``single()``, a cursor in autocommit, for a statement that stands alone)."""

    def __init__(self, transaction: Any, read: Any, single: Any) -> None:
        self._tx = transaction
        self._read = read
        self._single = single

    async def get(self, namespace: str, key: str) -> StoredRecord | None:
        async def op(cur: Any) -> StoredRecord | None:
            await cur.execute(
                f"SELECT {COLUMNS} FROM hermes_records WHERE namespace = %s AND key = %s AND {_UNEXPIRED}",
                (namespace, key),
            )
            row = await cur.fetchone()
            return _record(row) if row else None

        result: StoredRecord | None = await self._read(op)
        return result

    async def put(
        self, namespace: str, key: str, data: str, scope: str, ttl_s: float | None, expect: Expect | None
    ) -> StoredRecord | None:
        # One statement decides it (record_single): one round trip, no transaction.
        async with self._single() as cur:
            return await record_single.put(cur, namespace, key, data, scope, ttl_s, expect)

    async def insert(self, namespace: str, key: str, data: str, scope: str, ttl_s: float | None) -> Claim:
        # The usual case, a key nobody wrote, is one statement. One that was there is read
        # after; should it be gone by then (expired, deleted), the insert is tried again.
        for _ in range(_TRIES):
            async with self._single() as cur:
                made = await record_single.insert(cur, namespace, key, data, scope, ttl_s)
            if made is not None:
                return Claim(True, made)
            found = await self.get(namespace, key)
            if found is not None:
                return Claim(False, found)
        raise StorageError(f"record {namespace}/{key} kept changing under an insert; try again")

    async def claim(
        self,
        namespace: str,
        key: str,
        data: str,
        owner: str,
        scope: str,
        ttl_s: float | None,
        stale_after_s: float | None,
    ) -> Claim:
        # Most claims name a key nobody holds (a new session's id, a first lease): one INSERT in
        # autocommit takes it, one round trip instead of a transaction's five. A key already
        # there (held, stale or expired) is decided under the lock below.
        async with self._single() as cur:
            await cur.execute(
                f"INSERT INTO hermes_records ({COLUMNS}) "
                "SELECT %s, %s, %s, %s, %s, 1, 1, t.now, t.now, t.now + %s::double precision "
                f"FROM (SELECT {NOW}::double precision AS now) t "
                "ON CONFLICT DO NOTHING RETURNING created_at, expires_at",
                (namespace, key, data, scope, owner, ttl_s),
            )
            row = await cur.fetchone()
        if row is not None:
            now, expires = float(row[0]), None if row[1] is None else float(row[1])
            return Claim(True, StoredRecord(namespace, key, data, scope, owner, 1, 1, now, now, expires))
        for _ in range(_TRIES):
            async with self._tx() as cur:
                now, old = await _locked(cur, namespace, key)
                if old is None:
                    record = StoredRecord(
                        namespace, key, data, scope, owner, 1, 1, now, now, _expiry(now, ttl_s)
                    )
                    if await _insert(cur, record):
                        return Claim(True, record)
                    continue
                if (
                    old.owner is not None
                    and stale_after_s is not None
                    and old.updated_at < now - stale_after_s
                ):
                    record = StoredRecord(
                        namespace,
                        key,
                        data,
                        scope,
                        owner,
                        old.epoch + 1,
                        old.version + 1,
                        now,
                        now,
                        _expiry(now, ttl_s),
                    )
                    return Claim(True, await _update(cur, record))
                return Claim(False, old)
        raise StorageError(f"record {namespace}/{key} kept changing under a claim; try again")

    async def touch(
        self, namespace: str, key: str, expect: Expect | None, ttl_s: float | None
    ) -> StoredRecord | None:
        async with self._tx() as cur:
            now, old = await _locked(cur, namespace, key)
            if old is None or (expect is not None and not expect.matches(old)):
                return None
            expires = old.expires_at if ttl_s is None else now + ttl_s
            await cur.execute(
                "UPDATE hermes_records SET updated_at = %s, expires_at = %s "
                "WHERE namespace = %s AND key = %s",
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

    async def release(
        self, namespace: str, key: str, expect: Expect, data: str | None, ttl_s: float | None
    ) -> StoredRecord | None:
        async with self._single() as cur:  # one statement (record_single)
            return await record_single.release_one(cur, namespace, key, expect, data, ttl_s)

    async def delete(self, namespace: str, key: str, expect: Expect | None) -> bool:
        async with self._tx() as cur:
            _, old = await _locked(cur, namespace, key)
            if old is None or (expect is not None and not expect.matches(old)):
                return False
            await cur.execute(
                "DELETE FROM hermes_records WHERE namespace = %s AND key = %s", (namespace, key)
            )
            return True

    async def listing(
        self,
        namespace: str,
        scope: str | None,
        owner: str | None,
        held: bool | None,
        limit: int,
        cursor: str | None,
    ) -> RecordPage:
        where, params = _where(namespace, scope)
        if owner is not None:
            where += " AND owner = %s"
            params.append(owner)
        if held is not None:
            where += " AND owner IS NOT NULL" if held else " AND owner IS NULL"
        after = storage_kit.read_record_cursor(cursor)
        if after is not None:
            where += " AND (updated_at, key) < (%s, %s)"
            params += [after[0], after[1]]

        async def op(cur: Any) -> list[Any]:
            await cur.execute(
                f"SELECT {COLUMNS} FROM hermes_records WHERE {where} "
                "ORDER BY updated_at DESC, key DESC LIMIT %s",
                (*params, limit + 1),
            )
            return list(await cur.fetchall())

        rows = await self._read(op)
        records = [_record(r) for r in rows[:limit]]
        return RecordPage(records, storage_kit.record_page_cursor(records, limit, len(rows) > limit))

    async def count(self, namespace: str, scope: str | None) -> int:
        where, params = _where(namespace, scope)

        async def op(cur: Any) -> int:
            await cur.execute(f"SELECT count(*) FROM hermes_records WHERE {where}", params)
            row = await cur.fetchone()
            return int(row[0])

        result: int = await self._read(op)
        return result

    async def evict(self, namespace: str, keep: int, scope: str | None) -> int:
        where, params = _where(namespace, scope)
        async with self._tx() as cur:
            await cur.execute(
                "DELETE FROM hermes_records WHERE (namespace, key) IN "
                f"(SELECT namespace, key FROM hermes_records WHERE {where} "
                "ORDER BY updated_at DESC, key DESC OFFSET %s)",
                (*params, keep),
            )
            return int(cur.rowcount)

    async def sweep(self, namespace: str | None) -> int:
        async with self._tx() as cur:
            if namespace is None:
                await cur.execute(f"DELETE FROM hermes_records WHERE expires_at <= {NOW}")
            else:
                await cur.execute(
                    f"DELETE FROM hermes_records WHERE namespace = %s AND expires_at <= {NOW}", (namespace,)
                )
            return int(cur.rowcount)


def _where(namespace: str, scope: str | None) -> tuple[str, list[Any]]:
    where = f"namespace = %s AND {_UNEXPIRED}"
    params: list[Any] = [namespace]
    if scope is not None:
        where += " AND scope = %s"
        params.append(scope)
    return where, params
