"""The API server's records in the shared PostgreSQL database, for instances behind one load
balancer (docs/deploy.md#what-lives-where).

Implements :class:`hermes_api_server.records.ApiRecords`, like the SQLite file; chosen when the kernel's
storage backend is ``postgres``, so a stored response, a conversation name, a run's status and an
idempotency key written by one instance are seen by all. The tables carry an ``api_`` prefix and
live next to the kernel's in the schema the connection string selects.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import StorageUnavailable, storage_kit

if TYPE_CHECKING:
    from hermes_api_server.records import ApiRecords
    from hermes_core import Kernel


class _ConnectionLost(StorageUnavailable):
    """A pooled connection the server dropped; the statement that found out changed nothing."""


#: Serialises the ``CREATE TABLE IF NOT EXISTS`` of instances starting together.
SCHEMA_LOCK = 0x4E524D45
SCHEMA = """
CREATE TABLE IF NOT EXISTS api_responses (
    id TEXT PRIMARY KEY, principal TEXT NOT NULL, session_id TEXT NOT NULL,
    through_row_id BIGINT, instructions TEXT, object TEXT NOT NULL, accessed DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS api_responses_lru ON api_responses(accessed);
ALTER TABLE api_responses ADD COLUMN IF NOT EXISTS input TEXT;
CREATE TABLE IF NOT EXISTS api_conversations (
    principal TEXT NOT NULL, name TEXT NOT NULL, response_id TEXT NOT NULL, PRIMARY KEY (principal, name));
CREATE TABLE IF NOT EXISTS api_runs (
    run_id TEXT PRIMARY KEY, principal TEXT NOT NULL, status TEXT NOT NULL, terminal BOOLEAN NOT NULL,
    updated DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS api_runs_principal ON api_runs(principal, updated);
CREATE TABLE IF NOT EXISTS api_run_keys (
    principal TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, run_id TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL, PRIMARY KEY (principal, key));
CREATE TABLE IF NOT EXISTS api_turn_keys (
    principal TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    result TEXT, created DOUBLE PRECISION NOT NULL, touched DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (principal, scope, key));
CREATE TABLE IF NOT EXISTS api_console_sessions (
    digest TEXT PRIMARY KEY, principal TEXT NOT NULL, csrf TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS api_console_sessions_expiry ON api_console_sessions(expires_at);
"""


class PgResponseStore:
    """Durable API-server records shared by every instance on one PostgreSQL database."""

    #: Other instances write here too: a non-terminal run may belong to a live instance.
    shared = True

    def __init__(self, dsn: str, max_responses: int, pool_size: int = 4, pool_timeout_s: float = 5.0) -> None:
        self._dsn = dsn
        self.max_responses = max_responses
        self.pool_size = pool_size
        self.pool_timeout_s = pool_timeout_s
        self._pool: Any = None
        self._check = storage_kit.PoolCheck()

    async def open(self) -> None:
        """Connect and create the tables when missing."""
        from psycopg.conninfo import conninfo_to_dict
        from psycopg_pool import AsyncConnectionPool

        kwargs: dict[str, Any] = {"autocommit": True}
        if "application_name" not in conninfo_to_dict(self._dsn):
            kwargs["application_name"] = "hermes-api"
        pool = AsyncConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.pool_timeout_s,
            kwargs=kwargs,
            open=False,
            name="hermes-api",
        )
        await pool.open(wait=True, timeout=self.pool_timeout_s)
        self._pool = pool
        async with self._tx() as cur:
            await cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            await cur.execute(SCHEMA)

    async def close(self) -> None:
        """Close the pool."""
        await self._check.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @asynccontextmanager
    async def _tx(self, *, cache: bool = False) -> AsyncIterator[Any]:
        """A transaction; ``cache`` for records whose loss in a server crash costs only a recomputation
        (idempotency results): their commit does not wait for the disk."""
        import psycopg
        from psycopg_pool import PoolTimeout

        if self._pool is None:
            raise StorageUnavailable("the API server's PostgreSQL records are closed")
        if self._check.running:
            # The server dropped a connection a moment ago (a restart): let the pool weed out the
            # other dead ones before this call takes one.
            await self._check.settle(self.pool_timeout_s)
        try:
            async with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                if cache:
                    await cur.execute("SET LOCAL synchronous_commit = off")
                yield cur
        except PoolTimeout:
            raise StorageUnavailable(
                f"no free PostgreSQL connection for the API server's records within {self.pool_timeout_s:g} s"
            ) from None
        except psycopg.OperationalError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            if self._pool is not None:
                self._check.start(self._pool.check, "hermes-api-records-check")
            raise _ConnectionLost(f"PostgreSQL is unavailable: {first}") from None

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run one read (or an idempotent touch) and return its rows; a connection the server
        dropped is discarded and the statement is run again on another one."""

        async def once() -> list[tuple[Any, ...]]:
            async with self._tx() as cur:
                await cur.execute(sql, params)
                return list(await cur.fetchall())

        return await storage_kit.retried(once, _ConnectionLost, self.pool_size + 1)

    # -- responses ----------------------------------------------------------------------------
    async def put_response(
        self,
        response_id: str,
        principal: str,
        session_id: str,
        through_row_id: int | None,
        instructions: str | None,
        obj: dict[str, Any],
        conversation: str | None,
        input_items: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store (or replace) a response and point its conversation name at it; evict LRU."""
        text = json.dumps(obj, ensure_ascii=False)
        items = None if input_items is None else json.dumps(input_items, ensure_ascii=False)
        async with self._tx() as cur:
            await cur.execute(
                "INSERT INTO api_responses"
                " (id, principal, session_id, through_row_id, instructions, object, accessed, input)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET"
                " principal=EXCLUDED.principal, session_id=EXCLUDED.session_id,"
                " through_row_id=EXCLUDED.through_row_id, instructions=EXCLUDED.instructions,"
                " object=EXCLUDED.object, accessed=EXCLUDED.accessed, input=EXCLUDED.input",
                (response_id, principal, session_id, through_row_id, instructions, text, time.time(), items),
            )
            if conversation:
                await cur.execute(
                    "INSERT INTO api_conversations VALUES (%s, %s, %s) ON CONFLICT (principal, name)"
                    " DO UPDATE SET response_id=EXCLUDED.response_id",
                    (principal, conversation, response_id),
                )
            await cur.execute("SELECT COUNT(*) FROM api_responses")
            row = await cur.fetchone()
            count = int(row[0]) if row else 0
            if count > self.max_responses:
                await cur.execute(
                    "DELETE FROM api_responses WHERE id IN"
                    " (SELECT id FROM api_responses ORDER BY accessed LIMIT %s)",
                    (count - self.max_responses,),
                )

    async def get_response(self, principal: str, response_id: str) -> dict[str, Any] | None:
        """Return ``{session_id, through_row_id, instructions, object, input}`` and refresh its LRU slot."""
        rows = await self._fetch(
            "UPDATE api_responses SET accessed=%s WHERE id=%s AND principal=%s"
            " RETURNING session_id, through_row_id, instructions, object, input",
            (time.time(), response_id, principal),
        )
        if not rows:
            return None
        row = rows[0]
        return {
            "session_id": row[0],
            "through_row_id": row[1],
            "instructions": row[2],
            "object": json.loads(row[3]),
            "input": None if row[4] is None else json.loads(row[4]),
        }

    async def delete_response(self, principal: str, response_id: str) -> bool:
        """Delete a response and the names pointing at it."""
        async with self._tx() as cur:
            await cur.execute(
                "DELETE FROM api_responses WHERE id=%s AND principal=%s", (response_id, principal)
            )
            gone = bool(cur.rowcount > 0)
            await cur.execute(
                "DELETE FROM api_conversations WHERE principal=%s AND response_id=%s",
                (principal, response_id),
            )
        return gone

    async def conversation(self, principal: str, name: str) -> str | None:
        """Return the response id a conversation name points at."""
        rows = await self._fetch(
            "SELECT response_id FROM api_conversations WHERE principal=%s AND name=%s", (principal, name)
        )
        return str(rows[0][0]) if rows else None

    # -- runs ---------------------------------------------------------------------------------
    async def put_run(self, run_id: str, principal: str, status: dict[str, Any], terminal: bool) -> None:
        """Write a run's status; a terminal status is never replaced by a late non-terminal one."""
        text = json.dumps(status, ensure_ascii=False)
        async with self._tx() as cur:
            await cur.execute(
                "INSERT INTO api_runs VALUES (%s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET"
                " principal=EXCLUDED.principal, status=EXCLUDED.status, terminal=EXCLUDED.terminal,"
                " updated=EXCLUDED.updated WHERE NOT api_runs.terminal OR EXCLUDED.terminal",
                (run_id, principal, text, terminal, time.time()),
            )

    async def get_run(self, run_id: str) -> tuple[str, dict[str, Any]] | None:
        """Return (principal, status) of a stored run."""
        rows = await self._fetch("SELECT principal, status FROM api_runs WHERE run_id=%s", (run_id,))
        return (str(rows[0][0]), json.loads(rows[0][1])) if rows else None

    async def non_terminal_runs(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Return (run_id, principal, status) of runs not settled yet (on any instance)."""
        rows = await self._fetch("SELECT run_id, principal, status FROM api_runs WHERE NOT terminal", ())
        return [(str(r[0]), str(r[1]), json.loads(r[2])) for r in rows]

    async def runs_of(self, principal: str, limit: int) -> list[dict[str, Any]]:
        """Return the stored statuses of one principal's runs, most recently updated first."""
        rows = await self._fetch(
            "SELECT status FROM api_runs WHERE principal=%s ORDER BY updated DESC LIMIT %s",
            (principal, limit),
        )
        return [json.loads(r[0]) for r in rows]

    async def run_key(self, principal: str, key: str) -> tuple[str, str] | None:
        """Return (fingerprint, run_id) recorded for an idempotency key."""
        rows = await self._fetch(
            "SELECT fingerprint, run_id FROM api_run_keys WHERE principal=%s AND key=%s", (principal, key)
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    async def put_run_key(self, principal: str, key: str, fp: str, run_id: str) -> None:
        """Record an idempotency key."""
        async with self._tx() as cur:
            await cur.execute(
                "INSERT INTO api_run_keys VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (principal, key) DO UPDATE SET"
                " fingerprint=EXCLUDED.fingerprint, run_id=EXCLUDED.run_id, created=EXCLUDED.created",
                (principal, key, fp, run_id, time.time()),
            )

    async def sweep(self, retention_s: float, key_ttl_s: float) -> None:
        """Drop run statuses and idempotency records past their retention, and ended console sessions."""
        now = time.time()
        cutoff = now - retention_s
        async with self._tx() as cur:
            await cur.execute("DELETE FROM api_console_sessions WHERE expires_at <= %s", (now,))
            await cur.execute("DELETE FROM api_runs WHERE terminal AND updated < %s", (cutoff,))
            await cur.execute("DELETE FROM api_run_keys WHERE created < %s", (cutoff,))
            await cur.execute("DELETE FROM api_turn_keys WHERE created < %s", (now - key_ttl_s,))

    async def count_runs(self) -> int:
        """Return how many run statuses are stored."""
        async with self._tx() as cur:
            await cur.execute("SELECT COUNT(*) FROM api_runs")
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # -- console sessions ----------------------------------------------------------------------
    async def open_console_session(
        self, digest: str, principal: str, csrf: str, expires_at: float, max_sessions: int
    ) -> None:
        """Store a session; past ``max_sessions`` live ones, those ending soonest are dropped."""
        async with self._tx() as cur:
            await cur.execute("DELETE FROM api_console_sessions WHERE expires_at <= %s", (time.time(),))
            await cur.execute(
                "INSERT INTO api_console_sessions VALUES (%s, %s, %s, %s) ON CONFLICT (digest) DO UPDATE SET"
                " principal=EXCLUDED.principal, csrf=EXCLUDED.csrf, expires_at=EXCLUDED.expires_at",
                (digest, principal, csrf, expires_at),
            )
            await cur.execute(
                "DELETE FROM api_console_sessions WHERE digest IN (SELECT digest FROM api_console_sessions"
                " ORDER BY expires_at DESC OFFSET %s)",
                (max_sessions,),
            )

    async def console_session(self, digest: str) -> tuple[str, str, float] | None:
        """Return ``(principal, csrf, expires_at)`` of a live session; None when absent or expired."""
        rows = await self._fetch(
            "SELECT principal, csrf, expires_at FROM api_console_sessions"
            " WHERE digest=%s AND expires_at > %s",
            (digest, time.time()),
        )
        return (str(rows[0][0]), str(rows[0][1]), float(rows[0][2])) if rows else None

    async def close_console_session(self, digest: str) -> bool:
        """End a session (on every instance at once); tell whether there was one."""
        async with self._tx() as cur:
            await cur.execute("DELETE FROM api_console_sessions WHERE digest=%s", (digest,))
            return bool(cur.rowcount > 0)

    # -- results of non-streamed turns, by Idempotency-Key ---------------------------------------
    async def claim_key(
        self, principal: str, scope: str, key: str, fp: str, ttl_s: float, stale_s: float
    ) -> tuple[str, Any] | None:
        """Claim ``key`` for a computation, or return ``(fingerprint, result)`` of its holder.

        Twins on several instances race on the primary key: one insert wins, the others wait for
        its commit (``ON CONFLICT DO NOTHING``) and then read the winner's record.
        """
        ident = (principal, scope, key)
        for _ in range(3):
            now = time.time()
            async with self._tx(cache=True) as cur:
                await cur.execute(
                    "DELETE FROM api_turn_keys WHERE principal=%s AND scope=%s AND key=%s"
                    " AND (created < %s OR (result IS NULL AND touched < %s))",
                    (*ident, now - ttl_s, now - stale_s),
                )
                await cur.execute(
                    "INSERT INTO api_turn_keys VALUES (%s, %s, %s, %s, NULL, %s, %s) ON CONFLICT DO NOTHING",
                    (*ident, fp, now, now),
                )
                if cur.rowcount == 1:
                    return None
                await cur.execute(
                    "SELECT fingerprint, result FROM api_turn_keys"
                    " WHERE principal=%s AND scope=%s AND key=%s",
                    ident,
                )
                row = await cur.fetchone()
            if row is not None:
                return (str(row[0]), None if row[1] is None else json.loads(row[1]))
            # The holder released its claim between our insert and our read: try again.
        raise StorageUnavailable("an Idempotency-Key record kept changing under a claim; try again")

    async def touch_key(self, principal: str, scope: str, key: str) -> None:
        """Mark the computation under ``key`` alive."""
        async with self._tx(cache=True) as cur:
            await cur.execute(
                "UPDATE api_turn_keys SET touched=%s WHERE principal=%s AND scope=%s AND key=%s"
                " AND result IS NULL",
                (time.time(), principal, scope, key),
            )

    async def finish_key(self, principal: str, scope: str, key: str, result: Any) -> None:
        """Store the result of the computation under ``key``; its TTL starts now."""
        text = json.dumps(result, ensure_ascii=False)
        async with self._tx(cache=True) as cur:
            await cur.execute(
                "UPDATE api_turn_keys SET result=%s, created=%s WHERE principal=%s AND scope=%s AND key=%s",
                (text, time.time(), principal, scope, key),
            )

    async def drop_key(self, principal: str, scope: str, key: str) -> None:
        """Release an unfinished claim."""
        async with self._tx(cache=True) as cur:
            await cur.execute(
                "DELETE FROM api_turn_keys WHERE principal=%s AND scope=%s AND key=%s AND result IS NULL",
                (principal, scope, key),
            )


def choose_store(kernel: Kernel, data_dir: Path, max_responses: int) -> ApiRecords:
    """Return the (unopened) record store: the shared PostgreSQL database when the kernel's sessions
    live there, else the instance's own SQLite file ``<data_dir>/api_server.sqlite3``."""
    options = kernel.settings.storage
    if options.backend == "postgres" and options.dsn:
        return PgResponseStore(options.dsn, max_responses, pool_timeout_s=options.pool_timeout_s)
    from hermes_api_server.responses_store import ResponseStore

    return ResponseStore(data_dir / "api_server.sqlite3", max_responses)
