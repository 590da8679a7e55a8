"""The PostgreSQL storage backend: the ``Storage`` protocol over a bounded async connection pool.

Every call borrows one pooled connection (psycopg 3, async, autocommit) for one statement or
one transaction. A call that finds no free connection within ``pool_timeout_s``, or a server
that went away, fails with ``StorageUnavailable`` (HTTP 503 upstream) instead of waiting.

This module holds the pool, the translation of failures, the writer leases and the fences on
them, and the per-message row append; the other session reads and writes are in
:mod:`hermes_postgres.store_sessions`, the records and the event log in
:mod:`hermes_postgres.store_extras`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, NoReturn, TypeVar

from hermes_core import (
    HermesError,
    LeaseLost,
    NewRow,
    RecordClaim,
    SessionNotFound,
    SessionRecord,
    StorageError,
    StorageUnavailable,
    storage_kit,
)
from hermes_postgres import lease_ops, message_ops, session_ops
from hermes_postgres.dsn import advice, describe_server, scrub
from hermes_postgres.schema import SCHEMA_VERSION, current_version, migrate
from hermes_postgres.store_extras import PostgresExtras
from hermes_postgres.store_sessions import PostgresSessions

T = TypeVar("T")


class ConnectionLost(StorageUnavailable):
    """A pooled connection the server dropped (a restart, a fail-over, an administrator).

    Nothing was committed by the statement that found out; reads are tried again on another
    connection, writes fail with 503 for the client to retry.
    """


class PostgresStorage(PostgresSessions, PostgresExtras):
    """Sessions, messages, writer leases, records and event logs in a PostgreSQL database shared
    by many instances.

    :param dsn: the server (URL or key/value string).
    :param pool_size: most connections held at once.
    :param pool_timeout_s: how long a call waits for a free connection.
    :param read_only: every transaction read-only; nothing is created or migrated.
    """

    durable = True

    def __init__(
        self, dsn: str, *, pool_size: int = 10, pool_timeout_s: float = 5.0, read_only: bool = False
    ) -> None:
        self._dsn = dsn
        self.server = describe_server(dsn)
        self.pool_size = pool_size
        self.pool_timeout_s = pool_timeout_s
        self.read_only = read_only
        self._pool: Any = None
        self._closed = False
        self.schema_before_open: int | None = None
        # The leases this storage holds: session id → (owner, epoch); writes to these sessions
        # are fenced on the epoch.
        self._held: dict[str, tuple[str, int]] = {}
        self._check = storage_kit.PoolCheck()

    # -- lifecycle ----------------------------------------------------------------------------
    def _connect_kwargs(self) -> dict[str, Any]:
        from psycopg.conninfo import conninfo_to_dict

        kwargs: dict[str, Any] = {"autocommit": True}
        given = conninfo_to_dict(self._dsn)
        if "connect_timeout" not in given:
            kwargs["connect_timeout"] = max(2, round(self.pool_timeout_s))
        if "application_name" not in given:
            kwargs["application_name"] = "hermes"
        if self.read_only:
            kwargs["options"] = "-c default_transaction_read_only=on"
        return kwargs

    def _opening_error(self, exc: BaseException) -> StorageError:
        text = scrub(str(exc).strip() or type(exc).__name__, self._dsn)
        first = text.splitlines()[0] if text else type(exc).__name__
        return StorageUnavailable(f"cannot open PostgreSQL storage at {self.server}: {first}; {advice(text)}")

    async def open(self) -> None:
        """Connect, migrate from whatever version is there, and open the pool.

        :raises StorageUnavailable: the server cannot be reached or refuses us (no password shown).
        :raises StorageError: the database is unusable (e.g. newer schema).
        """
        if self._closed:
            raise StorageError(f"storage at {self.server} is closed")
        if self._pool is not None:
            return
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        kwargs = self._connect_kwargs()
        try:
            conn = await psycopg.AsyncConnection.connect(self._dsn, **kwargs)
        except (psycopg.Error, OSError) as exc:
            raise self._opening_error(exc) from None
        try:
            if self.read_only:
                async with conn.cursor() as cur:
                    version = await current_version(cur)
                if version != SCHEMA_VERSION:
                    raise StorageError(
                        f"PostgreSQL storage at {self.server} has schema version {version}, this Hermes "
                        f"needs {SCHEMA_VERSION}; start it once with write access"
                    )
                self.schema_before_open = version
            else:
                self.schema_before_open = await migrate(conn, self.server)
        except psycopg.Error as exc:
            raise self._opening_error(exc) from None
        finally:
            await conn.close()
        pool = AsyncConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.pool_timeout_s,
            kwargs=kwargs,
            open=False,
            name="hermes",
        )
        await pool.open(wait=False)
        self._pool = pool

    async def close(self) -> None:
        """Close the pool; later calls fail."""
        self._closed = True
        await self._check.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # -- plumbing -----------------------------------------------------------------------------
    def _open_pool(self) -> Any:
        pool = self._pool
        if pool is None:
            raise StorageError(f"storage at {self.server} is {'closed' if self._closed else 'not open'}")
        return pool

    def _failure(self, exc: Exception) -> Exception:
        """Translate a failure of a call into a typed error (others come back as they are)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        if isinstance(exc, HermesError):
            return exc
        if isinstance(exc, PoolTimeout):
            return StorageUnavailable(
                f"no free PostgreSQL connection within {self.pool_timeout_s:g} s "
                f"(storage.pool_size = {self.pool_size}); try again"
            )
        if isinstance(exc, psycopg.OperationalError):
            text = scrub(str(exc).strip(), self._dsn).splitlines()
            reason = text[0] if text else type(exc).__name__
            if self._pool is not None:
                # A restart drops every pooled connection: weed out the other dead ones now
                # instead of failing one request on each (calls meanwhile wait for it).
                self._check.start(self._pool.check, "hermes-pg-check")
            return ConnectionLost(f"PostgreSQL at {self.server} is unavailable: {reason}")
        if isinstance(exc, psycopg.Error):
            text = scrub(str(exc).strip(), self._dsn).splitlines()
            return StorageError(f"storage error at {self.server}: {text[0] if text else type(exc).__name__}")
        if isinstance(exc, (TypeError, ValueError, OverflowError)):
            # Values a column or JSON cannot hold; the transaction was rolled back.
            return StorageError(f"storage at {self.server} failed: {type(exc).__name__}: {exc}")
        return exc

    async def _read(self, op: Callable[[Any], Awaitable[T]]) -> T:
        """Run a read-only ``op(cursor)``; on a dropped connection, run it again on another one."""

        async def once() -> T:
            async with self._cursor() as cur:
                return await op(cur)

        return await storage_kit.retried(once, ConnectionLost, self.pool_size + 1)

    def _reraise(self, exc: Exception) -> NoReturn:
        failure = self._failure(exc)
        if failure is exc:
            raise exc
        raise failure from None

    @asynccontextmanager
    async def _cursor(self, *, transaction: bool = False) -> AsyncIterator[Any]:
        """Borrow a connection and give a cursor; translate every failure into a typed error."""
        pool = self._open_pool()
        if self._check.running:
            await self._check.settle(self.pool_timeout_s)
        try:
            # getconn/putconn rather than pool.connection(): its extra ``async with conn`` only
            # commits, and these connections are in autocommit (a transaction is explicit below).
            # putconn still checks the connection and replaces a broken one.
            conn = await pool.getconn()
            try:
                if transaction:
                    async with conn.transaction(), conn.cursor() as cur:
                        yield cur
                else:
                    async with conn.cursor() as cur:
                        yield cur
            finally:
                await pool.putconn(conn)
        except Exception as exc:
            self._reraise(exc)

    def _fence(self, session_id: str) -> tuple[str, int] | None:
        return self._held.get(session_id)

    async def _refused(self, cur: Any, session_id: str) -> HermesError:
        """Explain why a write to ``session_id`` touched nothing: no session, or the lease moved."""
        fence = self._fence(session_id)
        if fence is not None:
            holder, epoch = await lease_ops.holder(cur, session_id)
            if holder != fence[0] or epoch != fence[1]:
                # The fence stays: every later write is refused too, until we take the lease
                # again (acquire) or give it up (release).
                return LeaseLost(session_id, holder)
        return SessionNotFound(session_id)

    async def _check_fence(self, cur: Any, session_id: str) -> None:
        fence = self._fence(session_id)
        if fence is not None and not await lease_ops.check_fence(cur, session_id, *fence):
            raise await self._refused(cur, session_id)

    async def diagnostics(self) -> dict[str, Any]:
        """Report the server, schema version and pool state (health checks, ``--check``)."""

        async def versions(cur: Any) -> tuple[str, int]:
            await cur.execute("SELECT current_setting('server_version'), version FROM hermes_schema")
            found = await cur.fetchone()
            return str(found[0]), int(found[1])

        server_version, schema_version = await self._read(versions)
        stats = self._pool.get_stats() if self._pool is not None else {}
        return {
            "backend": "postgres",
            "server": self.server,
            "server_version": server_version,
            "schema_version": schema_version,
            "read_only": self.read_only,
            "pool": {
                "max": self.pool_size,
                "open": stats.get("pool_size", 0),
                "idle": stats.get("pool_available", 0),
                "waiting": stats.get("requests_waiting", 0),
                "timeout_s": self.pool_timeout_s,
            },
        }

    # -- leases -------------------------------------------------------------------------------
    async def create_leased_session(
        self,
        record: SessionRecord,
        rows: Sequence[NewRow],
        owner: str,
        ttl_s: float,
        claims: Sequence[RecordClaim] = (),
    ) -> list[int]:
        """Take a new session's writer lease and store it with its first rows (and the records it
        claims), in one statement (docs/reference/core.md#writer-lease); later writes are fenced
        on that lease.

        :raises StorageError: when the session exists, another live holder leases its id, or a
            claimed record is there.
        """
        now = time.time()
        async with self._cursor() as cur:
            found = await message_ops.create_leased_session(cur, record, rows, now, owner, ttl_s, claims)
            holder = None if found is not None else (await lease_ops.holder(cur, record.id))[0]
        if found is None:
            if holder is not None and holder != owner:
                raise StorageError(f"the writer lease of the new session {record.id} is held by {holder}")
            raise StorageError(f"session {record.id} already exists")
        epoch, ids = found
        self._held[record.id] = (owner, epoch)
        return ids

    async def acquire_lease(
        self, session_id: str, owner: str, ttl_s: float, take_over: str | None = None
    ) -> str | None:
        async with self._cursor() as cur:
            holder, epoch = await lease_ops.acquire(cur, session_id, owner, ttl_s, take_over)
        if holder is None:
            self._held[session_id] = (owner, epoch)
        return holder

    async def renew_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        async with self._cursor() as cur:
            epoch = await lease_ops.renew(cur, session_id, owner, ttl_s)
        if epoch is None:
            return False  # the fence stays: writes are refused until the lease is taken again
        self._held[session_id] = (owner, epoch)
        return True

    async def release_lease(self, session_id: str, owner: str) -> None:
        async with self._cursor() as cur:
            await lease_ops.release(cur, session_id, owner)
        held = self._held.get(session_id)
        if held is not None and held[0] == owner:
            del self._held[session_id]

    # -- the row append, made once per message ------------------------------------------------
    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        if not rows:
            return []
        return await self._append(session_id, rows, None)

    async def append_rows_and_update(
        self, session_id: str, rows: Sequence[NewRow], fields: Mapping[str, Any]
    ) -> list[int]:
        """Append rows and set session columns in the append's one statement (``AppendUpdates``)."""
        values = dict(fields)
        session_ops.check_fields(values)
        if not rows:
            await self.update_session(session_id, values)
            return []
        return await self._append(session_id, rows, values or None)

    async def _append(
        self, session_id: str, rows: Sequence[NewRow], fields: dict[str, Any] | None
    ) -> list[int]:
        # What _cursor does, written out: this is the call made once per message.
        pool = self._open_pool()
        if self._check.running:
            await self._check.settle(self.pool_timeout_s)
        try:
            conn = await pool.getconn()
            try:
                ids = await message_ops.append_rows(conn, session_id, rows, self._fence(session_id), fields)
                if not ids:
                    async with conn.cursor() as cur:
                        raise await self._refused(cur, session_id)
                return ids
            finally:
                await pool.putconn(conn)
        except Exception as exc:
            self._reraise(exc)
