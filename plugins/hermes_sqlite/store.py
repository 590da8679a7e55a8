"""The SQLite storage backend: the ``Storage`` protocol on top of one database thread.

Every method queues a job for the thread that owns the connection and awaits its result, so
the event loop never waits on SQLite. Mutating jobs are one ``BEGIN IMMEDIATE`` transaction
each (jobs queued together share one, each in a savepoint: group commit); a failure rolls the
whole job back and surfaces as ``StorageError``. Small jobs run on the loop instead while the
thread is idle (see :mod:`hermes_sqlite.inline` for which, and why that is safe).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hermes_core import HermesError, NewRow, RecordClaim, Row, SessionPage, SessionRecord, StorageError
from hermes_sqlite import message_ops, session_ops
from hermes_sqlite.db_state import DbState
from hermes_sqlite.inline import small_rows
from hermes_sqlite.schema import connect, describe_error
from hermes_sqlite.store_extras import SqliteExtras
from hermes_sqlite.wal_watch import WalWatch
from hermes_sqlite.worker import DbThread

T = TypeVar("T")


class SqliteStorage(SqliteExtras):
    """Sessions, messages, records and event logs in one SQLite file (WAL, ``synchronous=NORMAL``).

    :param path: the database file; created (with its folder) on ``open`` when missing.
    :param read_only: open without write access (e.g. for health checks); writes then fail.
    """

    durable = True  # rows survive the process (the in-memory backend says False)

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self._thread: DbThread | None = None
        self._closed = False
        # Made by the opener and touched only by jobs, which run one at a time (under the
        # database thread's lock, on the thread or inline on the loop).
        self._state: DbState | None = None

    async def open(self) -> None:
        """Open (and migrate) the database on its thread.

        :raises StorageError: naming the path when the file cannot be used.
        """
        if self._closed:
            raise StorageError(f"storage at {self.path} is closed")
        if self._thread is not None:
            return
        wal = None if self.read_only else WalWatch(self.path)
        thread = DbThread(f"hermes-sqlite:{self.path.name}", self._connect, self._forget, wal)
        try:
            await thread.start()
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(describe_error(self.path, exc, opening=True)) from exc
        self._thread = thread

    def _connect(self) -> sqlite3.Connection:
        """Open the connection and its companions (runs on the database thread)."""
        conn = connect(self.path, read_only=self.read_only)
        try:
            self._state = DbState(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _forget(self) -> None:
        """Drop what the connection's companions assumed of writes that did not commit."""
        if self._state is not None:
            self._state.forget()

    def _db(self) -> DbState:
        """Return the connection's state (for jobs: the opener, the first job, made it)."""
        state = self._state
        if state is None:
            raise StorageError(f"storage at {self.path} is not open")
        return state

    async def close(self) -> None:
        """Finish queued work, close the database and stop the thread; later calls fail."""
        self._closed = True
        thread, self._thread = self._thread, None
        if thread is None:
            return

        def final(conn: sqlite3.Connection) -> None:
            if not self.read_only:
                conn.execute("PRAGMA optimize")

        try:
            await thread.stop(final)
        except sqlite3.Error as exc:
            raise StorageError(describe_error(self.path, exc)) from exc

    async def diagnostics(self) -> dict[str, Any]:
        """Report how this backend's connection is set up (for health checks and tests).

        ``synchronous`` is per connection, so only the backend itself can report it.

        :returns: path, journal mode, synchronous level (1 = NORMAL), busy timeout in ms,
            foreign keys on/off, schema version and whether the store is read-only.
        """

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            def pragma(name: str) -> Any:
                return conn.execute(f"PRAGMA {name}").fetchone()[0]

            return {
                "path": str(self.path),
                "journal_mode": pragma("journal_mode"),
                "synchronous": pragma("synchronous"),
                "busy_timeout_ms": pragma("busy_timeout"),
                "foreign_keys": bool(pragma("foreign_keys")),
                "schema_version": pragma("user_version"),
                "read_only": self.read_only,
            }

        return await self._run(read)

    @property
    def inline_runs(self) -> int:
        """How many jobs have run inline on the loop so far (for tests and benchmarks)."""
        return self._thread.inline_runs if self._thread is not None else 0

    def writes_on_loop(self) -> bool:
        """Whether a session's small write started now would run on the event loop: the
        database thread is idle, so it runs inline (see :class:`hermes_core.storage.LoopWrites`)."""
        thread = self._thread
        return thread is not None and not self.read_only and thread.would_run_inline()

    def _submit(self, job: Callable[[sqlite3.Connection], T], inline: bool = False) -> asyncio.Future[T]:
        """Queue ``job`` on the database thread (or run it inline, when it may and the thread is
        idle); raise ``StorageError`` when not open."""
        thread = self._thread
        if thread is None:
            state = "closed" if self._closed else "not open"
            raise StorageError(f"storage at {self.path} is {state}")
        # Writes queued together share one commit (group commit, see hermes_sqlite.worker).
        return thread.call(job, group=not self.read_only, inline=inline)

    def _failure(self, exc: Exception) -> StorageError:
        """Turn a job's failure that is not already typed into a ``StorageError``."""
        if isinstance(exc, sqlite3.Error):
            return StorageError(describe_error(self.path, exc))
        # Mostly values SQLite or JSON cannot hold (TypeError, OverflowError, ValueError);
        # whatever it was, the job's transaction was rolled back.
        return StorageError(f"storage at {self.path} failed: {type(exc).__name__}: {exc}")

    async def _run(self, job: Callable[[sqlite3.Connection], T], inline: bool = False) -> T:
        """Run ``job`` on the database thread, turning every failure into a typed error.

        :param inline: the job may run on the loop (:mod:`hermes_sqlite.inline` says which may).
        """
        future = self._submit(job, inline)
        try:
            return await future
        except HermesError:
            raise
        except Exception as exc:
            raise self._failure(exc) from exc

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """Return a stored session, or None.

        :param session_id: the session id.
        :returns: the record with its active message count.
        """
        return await self._run(lambda conn: session_ops.get_session(conn, session_id), inline=True)

    async def find_session_by_title(self, title: str) -> SessionRecord | None:
        """Return the most recently active session with exactly this title.

        :param title: the exact title.
        :returns: the record, or None.
        """
        return await self._run(lambda conn: session_ops.find_session_by_title(conn, title), inline=True)

    async def create_session(self, record: SessionRecord, rows: Sequence[NewRow] = ()) -> list[int]:
        """Insert a session and its first rows in one transaction.

        :param record: the session; zero timestamps mean now.
        :param rows: its first rows.
        :returns: the row ids.
        :raises StorageError: when the session already exists.
        """
        rows = tuple(rows)

        return await self._run(
            lambda _conn: session_ops.create_session(self._db(), record, rows), inline=small_rows(rows)
        )

    async def create_leased_session(
        self,
        record: SessionRecord,
        rows: Sequence[NewRow],
        owner: str,
        ttl_s: float,
        claims: Sequence[RecordClaim] = (),
    ) -> list[int]:
        """Take a new session's writer lease and store it with its first rows (and the records it
        claims), in one transaction (docs/reference/core.md#writer-lease).

        :raises StorageError: when the session exists, another live holder leases its id, or a
            claimed record is there.
        """
        rows, claims = tuple(rows), tuple(claims)
        return await self._run(
            lambda _conn: session_ops.create_leased_session(self._db(), record, rows, owner, ttl_s, claims),
            inline=small_rows(rows),
        )

    async def update_session(self, session_id: str, fields: Mapping[str, Any]) -> None:
        """Update session columns and bump ``updated_at``.

        :param session_id: the session id.
        :param fields: column names as in ``SessionRecord`` (not ``id``/``message_count``).
        :raises SessionNotFound: when there is no such session.
        :raises InvalidValue: for an unknown field name.
        """
        fields = dict(fields)

        def job(conn: sqlite3.Connection) -> None:
            # It sets updated_at, maybe to a value of its own.
            self._db().stamps.forget(session_id)
            session_ops.update_session(conn, session_id, fields)

        await self._run(job, inline=True)

    async def list_sessions(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        cwd: str | None = None,
        title: str | None = None,
        hidden_sources: Sequence[str] = ("tool",),
    ) -> SessionPage:
        """List sessions by last activity, newest first.

        :param limit: page size.
        :param cursor: ``next_cursor`` of the previous page.
        :param cwd: only sessions with exactly this workspace.
        :param title: only sessions whose title contains this, ignoring case.
        :param hidden_sources: sources left out.
        :returns: the page.
        """
        hidden = tuple(hidden_sources)
        return await self._run(
            lambda conn: session_ops.list_sessions(
                conn, limit=limit, cursor=cursor, cwd=cwd, title=title, hidden_sources=hidden
            )
        )

    async def latest_session_for_channel(self, channel_key: str) -> str | None:
        """Return the id of the most recently active session with this channel key.

        :param channel_key: the channel key.
        :returns: the session id, or None.
        """
        return await self._run(
            lambda conn: session_ops.latest_session_for_channel(conn, channel_key), inline=True
        )

    async def acquire_lease(
        self, session_id: str, owner: str, ttl_s: float, take_over: str | None = None
    ) -> str | None:
        """Take the writer lease.

        :param session_id: the session id (it need not be stored yet).
        :param owner: our owner string.
        :param ttl_s: seconds until the lease expires unless renewed.
        :param take_over: a holder whose lease may be taken even before it expires.
        :returns: None on success, else the current holder's owner string.
        """
        return await self._run(
            lambda conn: session_ops.acquire_lease(conn, session_id, owner, ttl_s, take_over), inline=True
        )

    async def renew_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        """Extend our lease.

        :returns: False if we no longer hold it.
        """
        return await self._run(
            lambda conn: session_ops.renew_lease(conn, session_id, owner, ttl_s), inline=True
        )

    async def release_lease(self, session_id: str, owner: str) -> None:
        """Drop the lease if we hold it."""
        await self._run(lambda conn: session_ops.release_lease(conn, session_id, owner), inline=True)

    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        """Append rows in one transaction.

        :param session_id: a stored session.
        :param rows: the rows.
        :returns: their ids in order.
        :raises SessionNotFound: when the session is not stored.
        """
        rows = tuple(rows)
        # What _run does, written out: this is the call made once per message.
        future = self._submit(
            lambda _conn: message_ops.append_rows(self._db(), session_id, rows), small_rows(rows)
        )
        try:
            return await future
        except HermesError:
            raise
        except Exception as exc:
            raise self._failure(exc) from exc

    async def append_rows_and_update(
        self, session_id: str, rows: Sequence[NewRow], fields: Mapping[str, Any]
    ) -> list[int]:
        """Append rows and set session columns in one transaction (``AppendUpdates``).

        :raises SessionNotFound: when the session is not stored.
        :raises InvalidValue: a field that is not a session column (nothing is written).
        """
        rows, fields = tuple(rows), dict(fields)

        def job(_conn: object) -> list[int]:
            return message_ops.append_rows(self._db(), session_id, rows, fields)

        return await self._run(job, inline=small_rows(rows))

    async def load_rows(self, session_id: str, *, include_archived: bool = False) -> list[Row]:
        """Return rows ordered by ``(position, id)``.

        :param session_id: the session id.
        :param include_archived: also return soft-archived rows.
        :returns: the rows (empty for an unknown session).
        """
        # Only a cached session is cheap to load; a glance at the cache off the lock is only a
        # guess (the job checks again), which is all the choice needs.
        state = self._state
        cached = not include_archived and state is not None and state.cache.has(session_id)
        return await self._run(
            lambda _conn: message_ops.load_rows(self._db(), session_id, include_archived), inline=cached
        )

    async def rewrite(
        self,
        session_id: str,
        *,
        archive_row_ids: Sequence[int] = (),
        archived_reason: str | None = None,
        append: Sequence[NewRow] = (),
        session_fields: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """Soft-archive rows, append rows and update the session in one transaction.

        :param session_id: a stored session.
        :param archive_row_ids: rows of this session to archive.
        :param archived_reason: ``rewind``, ``compress`` or ``reconcile``.
        :param append: rows to append.
        :param session_fields: session columns to set.
        :returns: the ids of the appended rows.
        :raises StorageError: when a row id is not in this session (nothing changes).
        """
        ids = tuple(archive_row_ids)
        rows = tuple(append)
        fields = dict(session_fields) if session_fields else None

        return await self._run(
            lambda _conn: session_ops.rewrite(self._db(), session_id, ids, archived_reason, rows, fields)
        )

    async def update_row_meta(self, row_id: int, meta: Mapping[str, Any]) -> None:
        """Merge keys into a row's ``meta``.

        :param row_id: the row id.
        :param meta: keys to set.
        :raises StorageError: when there is no such row.
        """
        meta = dict(meta)
        await self._run(lambda _conn: message_ops.update_row_meta(self._db(), row_id, meta), inline=True)
