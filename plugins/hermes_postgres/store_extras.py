"""The PostgreSQL backend's records and event log: the ``RecordStore`` and ``EventLogStore``
parts of the storage protocol (docs/plugin-hooks.md#records, #the-event-log), in the same
database and on the same pool as the sessions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from hermes_core import ChunkInfo, ChunkWrite, Claim, EventChunk, Expect, RecordPage, StoredRecord
from hermes_postgres import event_ops
from hermes_postgres.record_ops import RecordOps

T = TypeVar("T")


class PostgresExtras:
    """Mixed into :class:`~hermes_postgres.store.PostgresStorage`, which provides the plumbing."""

    def _cursor(self, *, transaction: bool = False) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    async def _read(self, op: Callable[[Any], Awaitable[T]]) -> T:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    def _fence(self, session_id: str) -> tuple[str, int] | None:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    @property
    def _records(self) -> RecordOps:
        return RecordOps(lambda: self._cursor(transaction=True), self._read, lambda: self._cursor())

    # -- records ------------------------------------------------------------------------------
    async def get_record(self, namespace: str, key: str) -> StoredRecord | None:
        """Return the unexpired record, or None."""
        return await self._records.get(namespace, key)

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
        """Write the value; None when ``expect`` did not match."""
        return await self._records.put(namespace, key, data, scope, ttl_s, expect)

    async def insert_record(
        self, namespace: str, key: str, data: str, *, scope: str = "", ttl_s: float | None = None
    ) -> Claim:
        """Add the record unless an unexpired one is there (then hand that back)."""
        return await self._records.insert(namespace, key, data, scope, ttl_s)

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
        """Take the record when absent, expired or held and stale."""
        return await self._records.claim(namespace, key, data, owner, scope, ttl_s, stale_after_s)

    async def touch_record(
        self, namespace: str, key: str, *, expect: Expect | None = None, ttl_s: float | None = None
    ) -> StoredRecord | None:
        """Mark the record alive."""
        return await self._records.touch(namespace, key, expect, ttl_s)

    async def release_record(
        self,
        namespace: str,
        key: str,
        *,
        expect: Expect,
        data: str | None = None,
        ttl_s: float | None = None,
    ) -> StoredRecord | None:
        """Let go of a claim."""
        return await self._records.release(namespace, key, expect, data, ttl_s)

    async def delete_record(self, namespace: str, key: str, *, expect: Expect | None = None) -> bool:
        """Delete the record."""
        return await self._records.delete(namespace, key, expect)

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
        """List records, newest ``updated_at`` first."""
        return await self._records.listing(namespace, scope, owner, held, limit, cursor)

    async def count_records(self, namespace: str, *, scope: str | None = None) -> int:
        """Count the unexpired records."""
        return await self._records.count(namespace, scope)

    async def evict_records(self, namespace: str, *, keep: int, scope: str | None = None) -> int:
        """Keep only the ``keep`` newest records."""
        return await self._records.evict(namespace, keep, scope)

    async def sweep_records(self, namespace: str | None = None) -> int:
        """Delete expired records."""
        return await self._records.sweep(namespace)

    # -- the event log ------------------------------------------------------------------------
    async def write_event_chunks(self, writes: Sequence[ChunkWrite]) -> list[bool]:
        """Apply each write whose condition holds (and whose lease this storage still holds, when
        it holds one), all in one statement (one transaction, one round trip)."""
        items = tuple(writes)
        event_ops.check_all(items)
        if not items:
            return []
        async with self._cursor() as cur:
            return await event_ops.write_all(cur, items, [self._fence(item.session_id) for item in items])

    async def read_event_chunks(self, session_id: str, *, after: int, limit: int) -> list[EventChunk]:
        """Return up to ``limit`` chunks after ``after``."""
        return await self._read(lambda cur: event_ops.read(cur, session_id, after, limit))

    async def last_event_chunk(self, session_id: str) -> EventChunk | None:
        """Return the newest chunk."""
        return await self._read(lambda cur: event_ops.last(cur, session_id))

    async def event_log_index(self, session_id: str) -> list[ChunkInfo]:
        """Return every chunk's numbers and size."""
        return await self._read(lambda cur: event_ops.index(cur, session_id))

    async def trim_event_log(self, session_id: str, *, before: int) -> int:
        """Delete old chunks (never the newest)."""
        async with self._cursor(transaction=True) as cur:
            return await event_ops.trim(cur, session_id, before)
