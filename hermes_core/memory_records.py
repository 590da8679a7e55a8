"""The memory backend's records (:class:`~hermes_core.record_store.RecordStore` in a dictionary).

Nothing is written anywhere: the records live as long as the storage object.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_core.errors import StorageError
from hermes_core.record_store import (
    Claim,
    Expect,
    RecordChange,
    RecordPage,
    StoredRecord,
    page_cursor,
    read_cursor,
)

if TYPE_CHECKING:
    from hermes_core.storage import RecordClaim


def _expiry(now: float, ttl_s: float | None) -> float | None:
    return None if ttl_s is None else now + ttl_s


class MemoryRecords:
    """Records keyed by ``(namespace, key)``; part of :class:`~hermes_core.memory_storage.MemoryStorage`."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], StoredRecord] = {}

    def _live(self, namespace: str, key: str, now: float) -> StoredRecord | None:
        record = self._records.get((namespace, key))
        if record is not None and record.expires_at is not None and record.expires_at <= now:
            del self._records[(namespace, key)]
            return None
        return record

    def check_claims(self, claims: Sequence[RecordClaim], now: float) -> None:
        """Raise ``StorageError`` when a live record is under one of ``claims``' keys (a new
        session's first write checks before it writes anything)."""
        for claim in claims:
            there = self._live(claim.namespace, claim.key, now)
            if there is not None:
                raise StorageError(f"the record {claim.namespace}/{claim.key} is held by {there.owner}")

    def store_claims(self, claims: Sequence[RecordClaim], now: float) -> None:
        """Store each claim's record for its owner (after :meth:`check_claims`, in the same step)."""
        for claim in claims:
            self._records[(claim.namespace, claim.key)] = StoredRecord(
                claim.namespace, claim.key, "{}", "", claim.owner, 1, 1, now, now, None
            )

    async def get_record(self, namespace: str, key: str) -> StoredRecord | None:
        return self._live(namespace, key, time.time())

    async def put_record(
        self,
        namespace: str,
        key: str,
        data: str,
        *,
        scope: str = "",
        ttl_s: float | None = None,
        expect: Expect | None = None,
    ) -> StoredRecord | None:
        now = time.time()
        old = self._live(namespace, key, now)
        if expect is not None and (old is None or not expect.matches(old)):
            return None
        if old is None:
            record = StoredRecord(namespace, key, data, scope, None, 0, 1, now, now, _expiry(now, ttl_s))
        else:
            record = dataclasses.replace(
                old,
                data=data,
                scope=scope,
                version=old.version + 1,
                updated_at=now,
                expires_at=_expiry(now, ttl_s),
            )
        self._records[(namespace, key)] = record
        return record

    async def update_records(
        self, namespace: str, keys: Sequence[str], change: RecordChange
    ) -> list[StoredRecord] | None:
        now = time.time()
        olds = [self._live(namespace, key, now) for key in keys]
        made = change([None if old is None else old.data for old in olds])
        if made is None:
            return None
        written: list[StoredRecord] = []
        for key, old, data in zip(keys, olds, made, strict=True):
            if old is None:
                record = StoredRecord(namespace, key, data, "", None, 0, 1, now, now, None)
            else:
                record = dataclasses.replace(old, data=data, version=old.version + 1, updated_at=now)
            self._records[(namespace, key)] = record
            written.append(record)
        return written

    async def insert_record(
        self, namespace: str, key: str, data: str, *, scope: str = "", ttl_s: float | None = None
    ) -> Claim:
        now = time.time()
        old = self._live(namespace, key, now)
        if old is not None:
            return Claim(False, old)
        record = StoredRecord(namespace, key, data, scope, None, 1, 2, now, now, _expiry(now, ttl_s))
        self._records[(namespace, key)] = record
        return Claim(True, record)

    async def claim_record(
        self,
        namespace: str,
        key: str,
        data: str,
        *,
        owner: str,
        scope: str = "",
        ttl_s: float | None = None,
        stale_after_s: float | None = None,
    ) -> Claim:
        now = time.time()
        old = self._live(namespace, key, now)
        if old is None:
            record = StoredRecord(namespace, key, data, scope, owner, 1, 1, now, now, _expiry(now, ttl_s))
        elif old.owner is not None and stale_after_s is not None and old.updated_at < now - stale_after_s:
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
        else:
            return Claim(False, old)
        self._records[(namespace, key)] = record
        return Claim(True, record)

    async def touch_record(
        self, namespace: str, key: str, *, expect: Expect | None = None, ttl_s: float | None = None
    ) -> StoredRecord | None:
        now = time.time()
        old = self._live(namespace, key, now)
        if old is None or (expect is not None and not expect.matches(old)):
            return None
        expires = old.expires_at if ttl_s is None else now + ttl_s
        record = dataclasses.replace(old, updated_at=now, expires_at=expires)
        self._records[(namespace, key)] = record
        return record

    async def release_record(
        self,
        namespace: str,
        key: str,
        *,
        expect: Expect,
        data: str | None = None,
        ttl_s: float | None = None,
    ) -> StoredRecord | None:
        now = time.time()
        old = self._live(namespace, key, now)
        if old is None or not expect.matches(old):
            return None
        record = dataclasses.replace(
            old,
            data=old.data if data is None else data,
            owner=None,
            version=old.version + 1,
            updated_at=now,
            expires_at=_expiry(now, ttl_s),
        )
        self._records[(namespace, key)] = record
        return record

    async def delete_record(self, namespace: str, key: str, *, expect: Expect | None = None) -> bool:
        old = self._live(namespace, key, time.time())
        if old is None or (expect is not None and not expect.matches(old)):
            return False
        del self._records[(namespace, key)]
        return True

    def _select(self, namespace: str, scope: str | None, now: float) -> list[StoredRecord]:
        return [
            r
            for (ns, _), r in self._records.items()
            if ns == namespace
            and (scope is None or r.scope == scope)
            and (r.expires_at is None or r.expires_at > now)
        ]

    async def list_records(
        self,
        namespace: str,
        *,
        scope: str | None = None,
        owner: str | None = None,
        held: bool | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RecordPage:
        found = [
            r
            for r in self._select(namespace, scope, time.time())
            if (owner is None or r.owner == owner) and (held is None or (r.owner is not None) == held)
        ]
        found.sort(key=lambda r: (r.updated_at, r.key), reverse=True)
        after = read_cursor(cursor)
        if after is not None:
            found = [r for r in found if (r.updated_at, r.key) < after]
        page = found[:limit]
        return RecordPage(page, page_cursor(page, limit, len(found) > limit))

    async def count_records(self, namespace: str, *, scope: str | None = None) -> int:
        return len(self._select(namespace, scope, time.time()))

    async def evict_records(self, namespace: str, *, keep: int, scope: str | None = None) -> int:
        found = self._select(namespace, scope, time.time())
        found.sort(key=lambda r: (r.updated_at, r.key), reverse=True)
        for record in found[keep:]:
            del self._records[(namespace, record.key)]
        return len(found[keep:])

    async def sweep_records(self, namespace: str | None = None) -> int:
        now = time.time()
        gone = [
            k
            for k, r in self._records.items()
            if (namespace is None or k[0] == namespace) and r.expires_at is not None and r.expires_at <= now
        ]
        for k in gone:
            del self._records[k]
        return len(gone)
