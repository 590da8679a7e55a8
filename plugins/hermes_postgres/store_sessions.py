"""The PostgreSQL backend's sessions and their rows as read, created and rewritten: most of
the session part of the storage protocol (docs/plugin-hooks.md#hermes_storage_backends), on the
pool and under the write fences of :class:`~hermes_postgres.store.PostgresStorage`.

Two session writes stay in ``store.py``: ``create_leased_session``, which records the writer
lease it takes, and ``append_rows``, the once-per-message call that borrows its connection itself.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from hermes_core import HermesError, NewRow, Row, SessionNotFound, SessionPage, SessionRecord, StorageError
from hermes_postgres import lease_ops, message_ops, session_ops

T = TypeVar("T")


class PostgresSessions:
    """Mixed into :class:`~hermes_postgres.store.PostgresStorage`, which provides the plumbing
    and the fences."""

    def _cursor(self, *, transaction: bool = False) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    async def _read(self, op: Callable[[Any], Awaitable[T]]) -> T:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    def _fence(self, session_id: str) -> tuple[str, int] | None:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    async def _refused(self, cur: Any, session_id: str) -> HermesError:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    async def _check_fence(self, cur: Any, session_id: str) -> None:
        raise NotImplementedError  # pragma: no cover - PostgresStorage's

    # -- sessions -----------------------------------------------------------------------------
    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._read(lambda cur: session_ops.get_session(cur, session_id))

    async def find_session_by_title(self, title: str) -> SessionRecord | None:
        return await self._read(lambda cur: session_ops.find_session_by_title(cur, title))

    async def create_session(self, record: SessionRecord, rows: Sequence[NewRow] = ()) -> list[int]:
        now = time.time()
        fence = self._fence(record.id)
        async with self._cursor() as cur:  # one statement: the session and its rows commit together
            ids = await message_ops.create_session(cur, record, rows, now, fence)
            if ids is None and fence is not None and await lease_ops.holder(cur, record.id) != fence:
                raise await self._refused(cur, record.id)
        if ids is None:
            raise StorageError(f"session {record.id} already exists")
        return ids

    async def update_session(self, session_id: str, fields: Mapping[str, Any]) -> None:
        fields = dict(fields)
        session_ops.check_fields(fields)
        async with self._cursor() as cur:  # one statement, fenced
            if not await session_ops.set_session_fields(
                cur, session_id, fields, time.time(), self._fence(session_id)
            ):
                raise await self._refused(cur, session_id)

    async def list_sessions(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        cwd: str | None = None,
        title: str | None = None,
        hidden_sources: Sequence[str] = ("tool",),
    ) -> SessionPage:
        return await self._read(
            lambda cur: session_ops.list_sessions(
                cur, limit=limit, cursor=cursor, cwd=cwd, title=title, hidden_sources=tuple(hidden_sources)
            )
        )

    async def latest_session_for_channel(self, channel_key: str) -> str | None:
        return await self._read(lambda cur: session_ops.latest_session_for_channel(cur, channel_key))

    # -- rows ---------------------------------------------------------------------------------
    async def load_rows(self, session_id: str, *, include_archived: bool = False) -> list[Row]:
        return await self._read(lambda cur: message_ops.load_rows(cur, session_id, include_archived))

    async def rewrite(
        self,
        session_id: str,
        *,
        archive_row_ids: Sequence[int] = (),
        archived_reason: str | None = None,
        append: Sequence[NewRow] = (),
        session_fields: Mapping[str, Any] | None = None,
    ) -> list[int]:
        fields = dict(session_fields) if session_fields else None
        if fields:
            session_ops.check_fields(fields)
        now = time.time()
        async with self._cursor(transaction=True) as cur:
            await self._check_fence(cur, session_id)
            await cur.execute("UPDATE hermes_sessions SET updated_at = %s WHERE id = %s", (now, session_id))
            if cur.rowcount != 1:
                raise SessionNotFound(session_id)
            if archive_row_ids:
                await message_ops.archive_rows(cur, session_id, archive_row_ids, archived_reason)
            ids = await message_ops.insert_rows(cur, session_id, tuple(append), now)
            if fields and not await session_ops.set_session_fields(cur, session_id, fields, now):
                raise SessionNotFound(session_id)
            return ids

    async def update_row_meta(self, row_id: int, meta: Mapping[str, Any]) -> None:
        """Merge keys into a row's ``meta``, fenced like every write to the row's session.

        :raises StorageError: when there is no such row.
        :raises LeaseLost: when this storage held the session's lease and another took it over.
        """
        meta = dict(meta)
        async with self._cursor(transaction=True) as cur:
            session_id, stored = await message_ops.row_session(cur, row_id)
            await self._check_fence(cur, session_id)
            await message_ops.update_row_meta(cur, row_id, stored, meta)
