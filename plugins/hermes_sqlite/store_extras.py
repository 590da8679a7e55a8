"""The SQLite backend's records and event log: the ``RecordStore`` and ``EventLogStore`` parts of
the storage protocol (docs/plugin-hooks.md#records, #the-event-log), in the same database file,
on the same database thread, as the sessions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

from hermes_core import (
    ChunkInfo,
    ChunkWrite,
    Claim,
    EventChunk,
    Expect,
    RecordChange,
    RecordPage,
    StoredRecord,
)
from hermes_sqlite import event_ops, record_ops
from hermes_sqlite.inline import INLINE_ROWS, small_chunks

T = TypeVar("T")


class SqliteExtras:
    """Mixed into :class:`~hermes_sqlite.store.SqliteStorage`, which provides ``_run``.

    The records read or written by key may run inline on the loop (see :mod:`hermes_sqlite.inline`).
    """

    async def _run(self, job: Callable[[sqlite3.Connection], T], inline: bool = False) -> T:
        raise NotImplementedError  # pragma: no cover - SqliteStorage's

    # -- records ------------------------------------------------------------------------------
    async def get_record(self, namespace: str, key: str) -> StoredRecord | None:
        """Return the unexpired record, or None."""
        return await self._run(lambda conn: record_ops.get(conn, namespace, key), inline=True)

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
        return await self._run(
            lambda conn: record_ops.put(conn, namespace, key, data, scope, ttl_s, expect), inline=True
        )

    async def update_records(
        self, namespace: str, keys: Sequence[str], change: RecordChange
    ) -> list[StoredRecord] | None:
        """Write what ``change`` makes of several records' values, in one transaction."""
        names = tuple(keys)
        return await self._run(
            lambda conn: record_ops.update(conn, namespace, names, change), inline=len(names) <= INLINE_ROWS
        )

    async def insert_record(
        self, namespace: str, key: str, data: str, *, scope: str = "", ttl_s: float | None = None
    ) -> Claim:
        """Add the record unless an unexpired one is there (then hand that back)."""
        return await self._run(
            lambda conn: record_ops.insert(conn, namespace, key, data, scope, ttl_s), inline=True
        )

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
        return await self._run(
            lambda conn: record_ops.claim(conn, namespace, key, data, owner, scope, ttl_s, stale_after_s),
            inline=True,
        )

    async def touch_record(
        self, namespace: str, key: str, *, expect: Expect | None = None, ttl_s: float | None = None
    ) -> StoredRecord | None:
        """Mark the record alive."""
        return await self._run(
            lambda conn: record_ops.touch(conn, namespace, key, expect, ttl_s), inline=True
        )

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
        return await self._run(
            lambda conn: record_ops.release(conn, namespace, key, expect, data, ttl_s), inline=True
        )

    async def delete_record(self, namespace: str, key: str, *, expect: Expect | None = None) -> bool:
        """Delete the record."""
        return await self._run(lambda conn: record_ops.delete(conn, namespace, key, expect), inline=True)

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
        return await self._run(
            lambda conn: record_ops.listing(conn, namespace, scope, owner, held, limit, cursor)
        )

    async def count_records(self, namespace: str, *, scope: str | None = None) -> int:
        """Count the unexpired records."""
        return await self._run(lambda conn: record_ops.count(conn, namespace, scope))

    async def evict_records(self, namespace: str, *, keep: int, scope: str | None = None) -> int:
        """Keep only the ``keep`` newest records."""
        return await self._run(lambda conn: record_ops.evict(conn, namespace, keep, scope))

    async def sweep_records(self, namespace: str | None = None) -> int:
        """Delete expired records."""
        return await self._run(lambda conn: record_ops.sweep(conn, namespace))

    # -- the event log ------------------------------------------------------------------------
    async def write_event_chunks(self, writes: Sequence[ChunkWrite]) -> list[bool]:
        """Apply each write whose condition holds, in one transaction."""
        items = tuple(writes)
        return await self._run(lambda conn: event_ops.write(conn, items), inline=small_chunks(items))

    async def read_event_chunks(self, session_id: str, *, after: int, limit: int) -> list[EventChunk]:
        """Return up to ``limit`` chunks after ``after``."""
        return await self._run(lambda conn: event_ops.read(conn, session_id, after, limit))

    async def last_event_chunk(self, session_id: str) -> EventChunk | None:
        """Return the newest chunk."""
        return await self._run(lambda conn: event_ops.last(conn, session_id))

    async def event_log_index(self, session_id: str) -> list[ChunkInfo]:
        """Return every chunk's numbers and size."""
        return await self._run(lambda conn: event_ops.index(conn, session_id))

    async def trim_event_log(self, session_id: str, *, before: int) -> int:
        """Delete old chunks (never the newest)."""
        return await self._run(lambda conn: event_ops.trim(conn, session_id, before))
