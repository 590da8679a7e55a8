"""An in-memory storage backend: tests, embeds without a data dir, never-persisted sessions.

It follows the :class:`~hermes_core.storage.Storage` protocol exactly, records and the event log
included (:mod:`hermes_core.memory_records`, :mod:`hermes_core.memory_event_log`), so the kernel
cannot tell it from SQLite except that nothing survives the process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_core.errors import InvalidValue, SessionNotFound, StorageError
from hermes_core.evolve import evolve
from hermes_core.history import materialize
from hermes_core.memory_event_log import MemoryEventLog
from hermes_core.memory_records import MemoryRecords
from hermes_core.storage import PREVIEW_CHARS, NewRow, RecordClaim, Row, SessionPage, SessionRecord

#: The columns a session update may set.
_UPDATABLE = frozenset(f.name for f in dataclasses.fields(SessionRecord)) - {"id"}


class MemoryStorage(MemoryRecords, MemoryEventLog):
    """Sessions, rows, leases, records and event logs kept in dictionaries; no file is written."""

    durable = False

    def __init__(self) -> None:
        MemoryRecords.__init__(self)
        MemoryEventLog.__init__(self)
        self._sessions: dict[str, SessionRecord] = {}
        self._rows: dict[str, list[Row]] = {}
        self._leases: dict[str, tuple[str, float]] = {}
        self._next_id = 1

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def snapshot(self) -> dict[str, Any]:
        """Return everything this storage holds, as a copy of plain records (they are frozen),
        for :meth:`restore`: a subclass may keep it in a file between runs."""
        return {
            "sessions": dict(self._sessions),
            "rows": {sid: list(rows) for sid, rows in self._rows.items()},
            "leases": dict(self._leases),
            "next_id": self._next_id,
            "records": dict(self._records),
            "chunks": {sid: list(chunks) for sid, chunks in self._chunks.items()},
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Replace everything with what :meth:`snapshot` returned."""
        self._sessions = dict(state["sessions"])
        self._rows = {sid: list(rows) for sid, rows in state["rows"].items()}
        self._leases = dict(state["leases"])
        self._next_id = int(state["next_id"])
        self._records = dict(state["records"])
        self._chunks = {sid: list(chunks) for sid, chunks in state["chunks"].items()}

    def _with_count(self, rec: SessionRecord) -> SessionRecord:
        rows = self._rows.get(rec.id, ())
        count = sum(1 for r in rows if r.active)
        first = next(
            (
                r
                for r in sorted(rows, key=lambda r: (r.position, r.id))
                if r.active and r.role == "user" and r.display_kind not in ("model_switch", "hidden")
            ),
            None,
        )
        preview = first.content[:PREVIEW_CHARS] if first is not None else ""
        return dataclasses.replace(rec, message_count=count, preview=preview)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        rec = self._sessions.get(session_id)
        return self._with_count(rec) if rec else None

    async def find_session_by_title(self, title: str) -> SessionRecord | None:
        matches = [s for s in self._sessions.values() if s.title == title]
        if not matches:
            return None
        return self._with_count(max(matches, key=lambda s: (s.updated_at, s.id)))

    async def create_session(self, record: SessionRecord, rows: Sequence[NewRow] = ()) -> list[int]:
        if record.id in self._sessions:
            raise StorageError(f"session {record.id} already exists")
        now = time.time()
        self._sessions[record.id] = evolve(record, created_at=record.created_at or now, updated_at=now)
        self._rows.setdefault(record.id, [])
        return self._append(record.id, rows)

    async def create_leased_session(
        self,
        record: SessionRecord,
        rows: Sequence[NewRow],
        owner: str,
        ttl_s: float,
        claims: Sequence[RecordClaim] = (),
    ) -> list[int]:
        now = time.time()
        held = self._leases.get(record.id)
        if record.id not in self._sessions and held and held[0] != owner and held[1] > now:
            raise StorageError(f"the writer lease of the new session {record.id} is held by {held[0]}")
        self.check_claims(claims, now)
        # Nothing awaits between the checks and the writes: one step, as one transaction.
        ids = await self.create_session(record, rows)
        self._leases[record.id] = (owner, now + ttl_s)
        self.store_claims(claims, now)
        return ids

    async def update_session(self, session_id: str, fields: Mapping[str, Any]) -> None:
        rec = self._sessions.get(session_id)
        if rec is None:
            return
        self._sessions[session_id] = evolve(rec, **dict(fields), updated_at=time.time())

    async def list_sessions(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        cwd: str | None = None,
        title: str | None = None,
        hidden_sources: Sequence[str] = ("tool",),
    ) -> SessionPage:
        items = [
            s
            for s in self._sessions.values()
            if s.source not in hidden_sources
            and (cwd is None or s.cwd == cwd)
            and (title is None or title.lower() in (s.title or "").lower())
        ]
        items.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
        if cursor:
            ts, _, sid = cursor.partition("|")
            key = (float(ts), sid)
            items = [s for s in items if (s.updated_at, s.id) < key]
        page = [self._with_count(s) for s in items[:limit]]
        more = len(items) > limit
        nxt = f"{page[-1].updated_at}|{page[-1].id}" if more and page else None
        return SessionPage(page, nxt)

    async def latest_session_for_channel(self, channel_key: str) -> str | None:
        matches = [s for s in self._sessions.values() if s.channel_key == channel_key]
        if not matches:
            return None
        return max(matches, key=lambda s: (s.updated_at, s.id)).id

    async def acquire_lease(
        self, session_id: str, owner: str, ttl_s: float, take_over: str | None = None
    ) -> str | None:
        held = self._leases.get(session_id)
        now = time.time()
        if held and held[0] != owner and held[0] != take_over and held[1] > now:
            return held[0]
        self._leases[session_id] = (owner, now + ttl_s)
        return None

    async def renew_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        held = self._leases.get(session_id)
        if not held or held[0] != owner:
            return False
        self._leases[session_id] = (owner, time.time() + ttl_s)
        return True

    async def release_lease(self, session_id: str, owner: str) -> None:
        held = self._leases.get(session_id)
        if held and held[0] == owner:
            del self._leases[session_id]

    def _append(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        ids: list[int] = []
        bucket = self._rows.setdefault(session_id, [])
        for new in rows:
            rid = self._next_id
            self._next_id += 1
            bucket.append(materialize(session_id, new, rid))
            ids.append(rid)
        if session_id in self._sessions and rows:
            self._sessions[session_id] = evolve(self._sessions[session_id], updated_at=time.time())
        return ids

    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        return self._append(session_id, rows)

    async def append_rows_and_update(
        self, session_id: str, rows: Sequence[NewRow], fields: Mapping[str, Any]
    ) -> list[int]:
        """Append rows and set session columns together (``AppendUpdates``): all or nothing."""
        if session_id not in self._sessions:
            raise SessionNotFound(session_id)
        unknown = sorted(set(fields) - _UPDATABLE)
        if unknown:
            raise InvalidValue("fields", sorted(_UPDATABLE), f"unknown session fields: {', '.join(unknown)}")
        ids = await self.append_rows(session_id, rows)  # a subclass's append runs as well
        stored = self._sessions[session_id]
        self._sessions[session_id] = evolve(stored, **dict(fields), updated_at=time.time())
        return ids

    async def load_rows(self, session_id: str, *, include_archived: bool = False) -> list[Row]:
        rows = [r for r in self._rows.get(session_id, ()) if include_archived or r.active]
        return sorted(rows, key=lambda r: (r.position, r.id))

    async def rewrite(
        self,
        session_id: str,
        *,
        archive_row_ids: Sequence[int] = (),
        archived_reason: str | None = None,
        append: Sequence[NewRow] = (),
        session_fields: Mapping[str, Any] | None = None,
    ) -> list[int]:
        targets = set(archive_row_ids)
        bucket = self._rows.get(session_id, [])
        for i, row in enumerate(bucket):
            if row.id in targets and row.active:
                bucket[i] = dataclasses.replace(row, active=False, archived_reason=archived_reason)
        ids = self._append(session_id, append)
        if session_fields:
            await self.update_session(session_id, session_fields)
        return ids

    async def update_row_meta(self, row_id: int, meta: Mapping[str, Any]) -> None:
        for bucket in self._rows.values():
            for i, row in enumerate(bucket):
                if row.id == row_id:
                    bucket[i] = dataclasses.replace(row, meta={**row.meta, **meta})
                    return
