"""What the database thread keeps beside its connection, and what it may assume between writes.

All of it is touched only by jobs, which run one at a time under the database thread's lock (on
the thread, or inline on the loop; see :mod:`hermes_sqlite.worker`). Whatever describes the
database itself (the next row id, the activity stamps) holds only as long as no other connection
has committed; ``PRAGMA data_version`` — which changes exactly when another connection commits —
tells, and :meth:`DbState.check_writes` drops it all when it moved.
"""

from __future__ import annotations

import sqlite3

from hermes_sqlite.activity import ActivityStamps
from hermes_sqlite.row_cache import RowCache
from hermes_sqlite.row_codec import LOAD_COLUMNS, STATE_COLUMNS, RowBuilder

# The SQL aggregates a load hands its columns to (see RowBuilder).
ACTIVE_ROWS = "hermes_active_rows"
ANY_ROWS = "hermes_any_rows"

_NEXT_ID = "SELECT ifnull(max(id), 0) + 1 FROM messages"


class DbState:
    """The connection's companions: a cursor, the row cache, the row builder and write memos.

    :param conn: the connection, opened and migrated.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        # One cursor for the write path: ``conn.execute`` makes (and registers) a new cursor
        # per statement, which cost 1-2 µs each, five times per append.
        self.cursor = conn.cursor()
        self.cache = RowCache()
        self.stamps = ActivityStamps()
        self.builder = RowBuilder()
        # typeshed pictures every aggregate as taking one int and returning one.
        conn.create_aggregate(ACTIVE_ROWS, len(LOAD_COLUMNS), self.builder.active)  # type: ignore[arg-type]
        conn.create_aggregate(
            ANY_ROWS,
            len(LOAD_COLUMNS) + len(STATE_COLUMNS),
            self.builder.any_state,  # type: ignore[arg-type]
        )
        # The id the next inserted message gets, when known without asking (see claim_ids).
        self._next_id: int | None = None
        self._claimed: int | None = None
        self._data_version: int | None = None

    def check_writes(self) -> None:
        """Forget what another connection's commit may have made untrue.

        Call first thing inside a write transaction: holding the write lock, nobody else can
        commit until it ends.
        """
        version = self.cursor.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._data_version = version
            self._next_id = None
            self.stamps.clear()

    def forget(self) -> None:
        """Drop everything that assumed writes a failed group commit undid."""
        self._data_version = None
        self._next_id = self._claimed = None
        self.stamps.clear()
        self.cache.clear()

    def claim_ids(self, count: int) -> int:
        """Reserve ``count`` consecutive message ids inside the current write transaction.

        The ids follow the highest in the table: message rows are never deleted, so no id is
        ever handed out twice. After this connection's own commit that is simply where its
        last insert stopped, so the query is needed only after someone else wrote,
        or after a transaction that did not commit. Call :meth:`check_writes` first.

        :param count: how many rows will be inserted.
        :returns: the first id.
        """
        first = self._next_id
        if first is None:
            first = self.cursor.execute(_NEXT_ID).fetchone()[0]
        # Unknown until the transaction commits (see committed); a rollback keeps it unknown.
        self._next_id = None
        self._claimed = first + count
        return first

    def committed(self) -> None:
        """Record that the transaction that last claimed ids has committed."""
        self._next_id, self._claimed = self._claimed, None
