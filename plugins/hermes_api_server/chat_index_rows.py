"""The chat index's rows (:mod:`hermes_api_server.chat_index`) in either database
(docs/reference/api-server.md#persistence).

One row per (principal, history key, session): ``head`` tells whether the key is the latest point
the session's conversation reached, ``recorded`` when it was last recorded. Mixed into the SQLite
file's store and the PostgreSQL one, whose connection helpers they use.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

T = TypeVar("T")

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_index (
    principal TEXT NOT NULL, key TEXT NOT NULL, session_id TEXT NOT NULL, head INTEGER NOT NULL,
    recorded REAL NOT NULL, PRIMARY KEY (principal, key, session_id));
CREATE INDEX IF NOT EXISTS chat_index_heads ON chat_index(session_id) WHERE head = 1;
CREATE INDEX IF NOT EXISTS chat_index_age ON chat_index(recorded);
"""

PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_chat_index (
    principal TEXT NOT NULL, key TEXT NOT NULL, session_id TEXT NOT NULL, head BOOLEAN NOT NULL,
    recorded DOUBLE PRECISION NOT NULL, PRIMARY KEY (principal, key, session_id));
CREATE INDEX IF NOT EXISTS api_chat_index_heads ON api_chat_index(session_id) WHERE head;
CREATE INDEX IF NOT EXISTS api_chat_index_age ON api_chat_index(recorded);
"""


class SqliteChatIndex:
    """The chat index in the instance's own SQLite file."""

    if TYPE_CHECKING:

        async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...

    async def chat_sessions(
        self, principal: str, key: str, ttl_s: float, limit: int
    ) -> list[tuple[str, bool]]:
        """Return ``(session id, head)`` recorded under ``key``, most recently recorded first."""

        return await self._call(lambda db: _named(db, principal, key, time.time() - ttl_s, limit))

    async def record_chat(
        self, principal: str, session_id: str, heads: Sequence[str], earlier: Sequence[str], limit: int = 0
    ) -> dict[str, list[tuple[str, bool]]]:
        """Make ``heads`` the session's latest points; add ``earlier`` keys that are missing.
        With ``limit``, return what each head key names now (as :meth:`chat_sessions`)."""
        now = time.time()

        def write(db: sqlite3.Connection) -> dict[str, list[tuple[str, bool]]]:
            db.execute("UPDATE chat_index SET head=0 WHERE session_id=? AND head=1", (session_id,))
            db.executemany(
                "INSERT INTO chat_index VALUES (?, ?, ?, 1, ?) ON CONFLICT (principal, key, session_id)"
                " DO UPDATE SET head=1, recorded=excluded.recorded",
                [(principal, key, session_id, now) for key in heads],
            )
            db.executemany(
                "INSERT OR IGNORE INTO chat_index VALUES (?, ?, ?, 0, ?)",
                [(principal, key, session_id, now) for key in earlier],
            )
            if not limit:
                return {}
            return {key: _named(db, principal, key, 0.0, limit) for key in heads}

        return await self._call(write)

    async def sweep_chat_index(self, ttl_s: float, max_entries: int) -> None:
        """Drop keys recorded more than ``ttl_s`` ago, then the oldest past ``max_entries``."""

        def delete(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM chat_index WHERE recorded < ?", (time.time() - ttl_s,))
            db.execute(
                "DELETE FROM chat_index WHERE rowid IN"
                " (SELECT rowid FROM chat_index ORDER BY recorded DESC LIMIT -1 OFFSET ?)",
                (max_entries,),
            )

        await self._call(delete)


def _named(
    db: sqlite3.Connection, principal: str, key: str, since: float, limit: int
) -> list[tuple[str, bool]]:
    rows = db.execute(
        "SELECT session_id, head FROM chat_index WHERE principal=? AND key=? AND recorded >= ?"
        " ORDER BY recorded DESC LIMIT ?",
        (principal, key, since, limit),
    ).fetchall()
    return [(str(r[0]), bool(r[1])) for r in rows]


class PgChatIndex:
    """The chat index in the shared PostgreSQL database (``api_chat_index``)."""

    if TYPE_CHECKING:

        def _tx(self, *, cache: bool = False) -> AbstractAsyncContextManager[Any]: ...
        async def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    async def chat_sessions(
        self, principal: str, key: str, ttl_s: float, limit: int
    ) -> list[tuple[str, bool]]:
        """Return ``(session id, head)`` recorded under ``key``, most recently recorded first."""
        rows = await self._fetch(
            "SELECT session_id, head FROM api_chat_index WHERE principal=%s AND key=%s AND recorded >= %s"
            " ORDER BY recorded DESC LIMIT %s",
            (principal, key, time.time() - ttl_s, limit),
        )
        return [(str(r[0]), bool(r[1])) for r in rows]

    async def record_chat(
        self, principal: str, session_id: str, heads: Sequence[str], earlier: Sequence[str], limit: int = 0
    ) -> dict[str, list[tuple[str, bool]]]:
        """Make ``heads`` the session's latest points; add ``earlier`` keys that are missing.
        With ``limit``, return what each head key names now (as :meth:`chat_sessions`).

        A cache-grade commit (it does not wait for the disk): a key lost in a server crash only
        makes the next request of that conversation open a new session seeded from its body.
        """
        now = time.time()
        async with self._tx(cache=True) as cur:
            await cur.execute(
                "UPDATE api_chat_index SET head=false WHERE session_id=%s AND head", (session_id,)
            )
            await cur.executemany(
                "INSERT INTO api_chat_index VALUES (%s, %s, %s, true, %s)"
                " ON CONFLICT (principal, key, session_id)"
                " DO UPDATE SET head=true, recorded=EXCLUDED.recorded",
                [(principal, key, session_id, now) for key in heads],
            )
            if earlier:
                await cur.executemany(
                    "INSERT INTO api_chat_index VALUES (%s, %s, %s, false, %s) ON CONFLICT DO NOTHING",
                    [(principal, key, session_id, now) for key in earlier],
                )
            named: dict[str, list[tuple[str, bool]]] = {}
            for key in heads if limit else ():
                await cur.execute(
                    "SELECT session_id, head FROM api_chat_index WHERE principal=%s AND key=%s"
                    " ORDER BY recorded DESC LIMIT %s",
                    (principal, key, limit),
                )
                named[key] = [(str(r[0]), bool(r[1])) for r in await cur.fetchall()]
        return named

    async def sweep_chat_index(self, ttl_s: float, max_entries: int) -> None:
        """Drop keys recorded more than ``ttl_s`` ago, then the oldest past ``max_entries``."""
        async with self._tx() as cur:
            await cur.execute("DELETE FROM api_chat_index WHERE recorded < %s", (time.time() - ttl_s,))
            await cur.execute(
                "DELETE FROM api_chat_index WHERE ctid IN"
                " (SELECT ctid FROM api_chat_index ORDER BY recorded DESC OFFSET %s)",
                (max_entries,),
            )
