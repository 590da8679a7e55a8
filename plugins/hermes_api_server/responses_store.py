"""The plugin's own SQLite file: stored responses, conversation names, run statuses
(docs/reference/api-server.md#persistence).

Stdlib ``sqlite3`` in WAL mode, mode 0600, every call on one worker thread off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY, principal TEXT NOT NULL, session_id TEXT NOT NULL,
    through_row_id INTEGER, instructions TEXT, object TEXT NOT NULL, accessed REAL NOT NULL, input TEXT);
CREATE INDEX IF NOT EXISTS responses_lru ON responses(accessed);
CREATE TABLE IF NOT EXISTS conversations (
    principal TEXT NOT NULL, name TEXT NOT NULL, response_id TEXT NOT NULL, PRIMARY KEY (principal, name));
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, principal TEXT NOT NULL, status TEXT NOT NULL, terminal INTEGER NOT NULL,
    updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS run_keys (
    principal TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, run_id TEXT NOT NULL,
    created REAL NOT NULL, PRIMARY KEY (principal, key));
CREATE TABLE IF NOT EXISTS turn_keys (
    principal TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    result TEXT, created REAL NOT NULL, touched REAL NOT NULL, PRIMARY KEY (principal, scope, key));
CREATE TABLE IF NOT EXISTS console_sessions (
    digest TEXT PRIMARY KEY, principal TEXT NOT NULL, csrf TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS console_sessions_expiry ON console_sessions(expires_at);
"""


class ResponseStore:
    """Durable API-server records."""

    #: Only this process writes here.
    shared = False

    def __init__(self, path: Path, max_responses: int) -> None:
        self.path = path
        self.max_responses = max_responses
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-api-db")
        self._db: sqlite3.Connection | None = None

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            assert self._db is not None
            with self._db:
                return fn(self._db)

        return await asyncio.get_running_loop().run_in_executor(self._executor, run)

    async def open(self) -> None:
        """Create or open the file (0600) and its tables."""

        def connect() -> None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            db = sqlite3.connect(self.path, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
            if "input" not in columns:  # a file from before input items were kept
                db.execute("ALTER TABLE responses ADD COLUMN input TEXT")
            self._db = db

        await asyncio.get_running_loop().run_in_executor(self._executor, connect)

    async def close(self) -> None:
        """Close the file and the worker thread."""

        def shut() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        await asyncio.get_running_loop().run_in_executor(self._executor, shut)
        self._executor.shutdown(wait=False)

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

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO responses"
                " (id, principal, session_id, through_row_id, instructions, object, accessed, input)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (response_id, principal, session_id, through_row_id, instructions, text, time.time(), items),
            )
            if conversation:
                db.execute(
                    "INSERT OR REPLACE INTO conversations VALUES (?, ?, ?)",
                    (principal, conversation, response_id),
                )
            (count,) = db.execute("SELECT COUNT(*) FROM responses").fetchone()
            if count > self.max_responses:
                db.execute(
                    "DELETE FROM responses WHERE id IN (SELECT id FROM responses ORDER BY accessed LIMIT ?)",
                    (count - self.max_responses,),
                )

        await self._call(write)

    async def get_response(self, principal: str, response_id: str) -> dict[str, Any] | None:
        """Return ``{session_id, through_row_id, instructions, object, input}`` and refresh its LRU slot."""

        def read(db: sqlite3.Connection) -> dict[str, Any] | None:
            row = db.execute(
                "SELECT session_id, through_row_id, instructions, object, input FROM responses"
                " WHERE id=? AND principal=?",
                (response_id, principal),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE responses SET accessed=? WHERE id=?", (time.time(), response_id))
            return {
                "session_id": row[0],
                "through_row_id": row[1],
                "instructions": row[2],
                "object": json.loads(row[3]),
                "input": None if row[4] is None else json.loads(row[4]),
            }

        return await self._call(read)

    async def delete_response(self, principal: str, response_id: str) -> bool:
        """Delete a response and the names pointing at it."""

        def delete(db: sqlite3.Connection) -> bool:
            cur = db.execute("DELETE FROM responses WHERE id=? AND principal=?", (response_id, principal))
            db.execute(
                "DELETE FROM conversations WHERE principal=? AND response_id=?", (principal, response_id)
            )
            return cur.rowcount > 0

        return await self._call(delete)

    async def conversation(self, principal: str, name: str) -> str | None:
        """Return the response id a conversation name points at."""

        def read(db: sqlite3.Connection) -> str | None:
            row = db.execute(
                "SELECT response_id FROM conversations WHERE principal=? AND name=?", (principal, name)
            ).fetchone()
            return row[0] if row else None

        return await self._call(read)

    # -- runs ---------------------------------------------------------------------------------
    async def put_run(self, run_id: str, principal: str, status: dict[str, Any], terminal: bool) -> None:
        """Write a run's status."""
        text = json.dumps(status, ensure_ascii=False)

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                (run_id, principal, text, int(terminal), time.time()),
            )

        await self._call(write)

    async def get_run(self, run_id: str) -> tuple[str, dict[str, Any]] | None:
        """Return (principal, status) of a stored run."""

        def read(db: sqlite3.Connection) -> tuple[str, dict[str, Any]] | None:
            row = db.execute("SELECT principal, status FROM runs WHERE run_id=?", (run_id,)).fetchone()
            return (row[0], json.loads(row[1])) if row else None

        return await self._call(read)

    async def non_terminal_runs(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Return (run_id, principal, status) of runs left unsettled."""

        def read(db: sqlite3.Connection) -> list[tuple[str, str, dict[str, Any]]]:
            rows = db.execute("SELECT run_id, principal, status FROM runs WHERE terminal=0").fetchall()
            return [(r[0], r[1], json.loads(r[2])) for r in rows]

        return await self._call(read)

    async def runs_of(self, principal: str, limit: int) -> list[dict[str, Any]]:
        """Return the stored statuses of one principal's runs, most recently updated first."""

        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(
                "SELECT status FROM runs WHERE principal=? ORDER BY updated DESC LIMIT ?", (principal, limit)
            ).fetchall()
            return [json.loads(r[0]) for r in rows]

        return await self._call(read)

    async def run_key(self, principal: str, key: str) -> tuple[str, str] | None:
        """Return (fingerprint, run_id) recorded for an idempotency key."""

        def read(db: sqlite3.Connection) -> tuple[str, str] | None:
            row = db.execute(
                "SELECT fingerprint, run_id FROM run_keys WHERE principal=? AND key=?", (principal, key)
            ).fetchone()
            return (row[0], row[1]) if row else None

        return await self._call(read)

    async def put_run_key(self, principal: str, key: str, fp: str, run_id: str) -> None:
        """Record an idempotency key."""

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO run_keys VALUES (?, ?, ?, ?, ?)",
                (principal, key, fp, run_id, time.time()),
            )

        await self._call(write)

    async def sweep(self, retention_s: float, key_ttl_s: float) -> None:
        """Drop run statuses and idempotency records past their retention, and ended console sessions."""
        now = time.time()
        cutoff = now - retention_s

        def delete(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM runs WHERE terminal=1 AND updated < ?", (cutoff,))
            db.execute("DELETE FROM run_keys WHERE created < ?", (cutoff,))
            db.execute("DELETE FROM turn_keys WHERE created < ?", (now - key_ttl_s,))
            db.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (now,))

        await self._call(delete)

    async def count_runs(self) -> int:
        """Return how many run statuses are stored."""
        return await self._call(lambda db: int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]))

    # -- console sessions ----------------------------------------------------------------------
    async def open_console_session(
        self, digest: str, principal: str, csrf: str, expires_at: float, max_sessions: int
    ) -> None:
        """Store a session; past ``max_sessions`` live ones, those ending soonest are dropped."""

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (time.time(),))
            db.execute(
                "INSERT OR REPLACE INTO console_sessions VALUES (?, ?, ?, ?)",
                (digest, principal, csrf, expires_at),
            )
            db.execute(
                "DELETE FROM console_sessions WHERE digest IN"
                " (SELECT digest FROM console_sessions ORDER BY expires_at DESC LIMIT -1 OFFSET ?)",
                (max_sessions,),
            )

        await self._call(write)

    async def console_session(self, digest: str) -> tuple[str, str, float] | None:
        """Return ``(principal, csrf, expires_at)`` of a live session; None when absent or expired."""

        def read(db: sqlite3.Connection) -> tuple[str, str, float] | None:
            row = db.execute(
                "SELECT principal, csrf, expires_at FROM console_sessions WHERE digest=? AND expires_at > ?",
                (digest, time.time()),
            ).fetchone()
            return (row[0], row[1], float(row[2])) if row else None

        return await self._call(read)

    async def close_console_session(self, digest: str) -> bool:
        """End a session; tell whether there was one."""
        return await self._call(
            lambda db: db.execute("DELETE FROM console_sessions WHERE digest=?", (digest,)).rowcount > 0
        )

    # -- results of non-streamed turns, by Idempotency-Key ---------------------------------------
    async def claim_key(
        self, principal: str, scope: str, key: str, fp: str, ttl_s: float, stale_s: float
    ) -> tuple[str, Any] | None:
        """Claim ``key`` for a computation, or return ``(fingerprint, result)`` of its holder."""
        ident = (principal, scope, key)

        def claim(db: sqlite3.Connection) -> tuple[str, Any] | None:
            now = time.time()
            db.execute(
                "DELETE FROM turn_keys WHERE principal=? AND scope=? AND key=?"
                " AND (created < ? OR (result IS NULL AND touched < ?))",
                (*ident, now - ttl_s, now - stale_s),
            )
            row = db.execute(
                "SELECT fingerprint, result FROM turn_keys WHERE principal=? AND scope=? AND key=?", ident
            ).fetchone()
            if row is not None:
                return (row[0], None if row[1] is None else json.loads(row[1]))
            db.execute("INSERT INTO turn_keys VALUES (?, ?, ?, ?, NULL, ?, ?)", (*ident, fp, now, now))
            return None

        return await self._call(claim)

    async def touch_key(self, principal: str, scope: str, key: str) -> None:
        """Mark the computation under ``key`` alive."""
        await self._call(
            lambda db: db.execute(
                "UPDATE turn_keys SET touched=? WHERE principal=? AND scope=? AND key=? AND result IS NULL",
                (time.time(), principal, scope, key),
            )
        )

    async def finish_key(self, principal: str, scope: str, key: str, result: Any) -> None:
        """Store the result of the computation under ``key``; its TTL starts now."""
        text = json.dumps(result, ensure_ascii=False)
        await self._call(
            lambda db: db.execute(
                "UPDATE turn_keys SET result=?, created=? WHERE principal=? AND scope=? AND key=?",
                (text, time.time(), principal, scope, key),
            )
        )

    async def drop_key(self, principal: str, scope: str, key: str) -> None:
        """Release an unfinished claim."""
        await self._call(
            lambda db: db.execute(
                "DELETE FROM turn_keys WHERE principal=? AND scope=? AND key=? AND result IS NULL",
                (principal, scope, key),
            )
        )
