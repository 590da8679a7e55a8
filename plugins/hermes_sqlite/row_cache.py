"""A cache of decoded active rows for recently loaded sessions.

Decoding a long history costs far more than reading it, and hosts such as the API server load
the same history on every request. The cache is touched only by jobs, one at a time (no locking
of its own). It stays correct by construction: this connection's own writes update or drop the
affected session after they commit, and ``PRAGMA data_version`` — which changes whenever another
connection commits — drops everything when some other process (or another storage object) wrote
to the file.
"""

from __future__ import annotations

import operator
import sqlite3
from collections import OrderedDict

from hermes_core import ImagePart, Row

MAX_ROWS = 50_000
MAX_CHARS = 32_000_000


_content = operator.attrgetter("content")


def _size(rows: list[Row]) -> int:
    """Estimate what rows hold, in characters (bytes for images), plus a fixed cost per row."""
    size = 64 * len(rows) + sum(map(len, map(_content, rows)))
    for row in rows:
        if row.parts or row.reasoning:
            size += len(row.reasoning or "")
            for part in row.parts:
                size += len(part.data or b"") if isinstance(part, ImagePart) else len(part.text)
    return size


class RowCache:
    """Active rows per session, least recently used dropped first.

    :param max_rows: most rows kept over all sessions.
    :param max_chars: most characters of content kept over all sessions (a rough memory bound).
    """

    def __init__(self, max_rows: int = MAX_ROWS, max_chars: int = MAX_CHARS) -> None:
        self._max_rows = max_rows
        self._max_chars = max_chars
        self._sessions: OrderedDict[str, tuple[list[Row], int]] = OrderedDict()
        self._rows = 0
        self._chars = 0
        self._data_version: int | None = None

    def sync(self, conn: sqlite3.Connection) -> None:
        """Drop everything when another connection has committed since the last look.

        :param conn: the connection this cache belongs to.
        """
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self.clear()
            self._data_version = version

    def has(self, session_id: str) -> bool:
        """Say whether a session's rows are cached.

        :param session_id: the session.
        :returns: True when cached.
        """
        return session_id in self._sessions

    def get(self, session_id: str) -> list[Row] | None:
        """Return a session's cached active rows, or None.

        Rows are frozen and their ``meta`` read-only, so they are shared, not copied.

        :param session_id: the session.
        :returns: a new list, or None when not cached.
        """
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        self._sessions.move_to_end(session_id)
        return list(entry[0])

    def put(self, session_id: str, rows: list[Row]) -> None:
        """Remember a session's active rows (as just loaded).

        :param session_id: the session.
        :param rows: all of its active rows, in order; the list is kept, not copied.
        """
        self.forget(session_id)
        if rows:
            self._store(session_id, rows, _size(rows))

    def extend(self, session_id: str, rows: list[Row]) -> None:
        """Add rows this connection has just appended, if the session is cached.

        New rows have the highest ids, so they go last unless a position sorts one earlier
        (a summary row); then the session is dropped and reloaded when next asked for.

        :param session_id: the session.
        :param rows: the appended rows, in id order.
        """
        entry = self._sessions.pop(session_id, None)
        if entry is None:
            return
        cached, size = entry
        self._rows -= len(cached)
        self._chars -= size
        last = cached[-1].position
        for row in rows:
            if row.position < last:
                return
            last = row.position
        cached.extend(rows)
        self._store(session_id, cached, size + _size(rows))

    def _store(self, session_id: str, rows: list[Row], size: int) -> None:
        if len(rows) > self._max_rows or size > self._max_chars:
            return
        self._sessions[session_id] = (rows, size)
        self._rows += len(rows)
        self._chars += size
        while self._rows > self._max_rows or self._chars > self._max_chars:
            _, (old, old_size) = self._sessions.popitem(last=False)
            self._rows -= len(old)
            self._chars -= old_size

    def forget(self, session_id: str) -> None:
        """Drop one session.

        :param session_id: the session.
        """
        entry = self._sessions.pop(session_id, None)
        if entry is not None:
            self._rows -= len(entry[0])
            self._chars -= entry[1]

    def clear(self) -> None:
        """Drop everything."""
        self._sessions.clear()
        self._rows = 0
        self._chars = 0
