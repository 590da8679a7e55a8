"""Which storage jobs may run inline on the event loop (see :meth:`DbThread.call`).

A job run on the database thread costs its caller a round trip of 1-1.7 ms at low load on two
shared cores: the thread must get a core and the GIL while the loop, the client and the
upstream all run. A small job run on the loop while the thread is idle costs only its own
time. Two things make a job fit for that:

* It is small: it must not hold the loop up. Reads of one session or one record by key, and
  one ``write_transaction`` of a bounded number of rows (:func:`small_rows`).
* It is safe to run again on the thread after failing on the loop with SQLITE_BUSY (the loop
  never waits on another process's lock: inline jobs see a busy timeout of 0). A write job
  whose first statement is ``BEGIN IMMEDIATE`` meets the other writer there, before it has
  changed anything; once it holds the write lock no later statement of it can be busy (in WAL
  mode a ``COMMIT`` needs no further lock, and with automatic checkpoints off it runs none). A
  read in WAL mode waits for no writer; the rare busy of a reader (a log being recovered)
  comes before it has read anything. Whatever a job changed in the connection's companions
  before failing is a forgetting (``check_writes``, ``stamps.forget``), which is harmless twice.

Inline: ``get_session``, ``find_session_by_title``, ``latest_session_for_channel``,
``acquire_lease``, ``renew_lease``, ``release_lease``, ``create_session``,
``create_leased_session`` and ``append_rows`` with small rows, ``update_session``,
``update_row_meta``, ``load_rows`` of a session whose active rows are cached, and the records
written or read by key (``get``, ``put``, ``update`` of a few keys, ``insert``, ``claim``,
``touch``, ``release``, ``delete``: the API's key lookups and the budgets' reservations), and
event log writes of a few small chunks (:func:`small_chunks`).

Queued as before: listings and counts (their size has no bound), ``rewrite`` (it may archive
any number of rows), evictions, sweeps and trims, the event log's reads, and every load that
has to decode rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hermes_core import ChunkWrite, NewRow

#: At most this many rows, and this many characters of content and reasoning, make a write small.
INLINE_ROWS = 8
INLINE_CHARS = 64_000


def small_rows(rows: Sequence[NewRow]) -> bool:
    """Say whether writing ``rows`` is small enough to run inline (no images, little text).

    :param rows: the rows a job inserts.
    :returns: True when small.
    """
    if len(rows) > INLINE_ROWS:
        return False
    chars = 0
    for row in rows:
        if row.parts:
            return False
        chars += len(row.content) + len(row.reasoning or "")
    return chars <= INLINE_CHARS


def small_chunks(writes: Sequence[ChunkWrite]) -> bool:
    """Say whether an event log write is small enough to run inline.

    :param writes: the chunks a job writes.
    :returns: True for a few chunks of little data.
    """
    return len(writes) <= INLINE_ROWS and sum(len(w.chunk.data) for w in writes) <= INLINE_CHARS


def is_busy(exc: BaseException) -> bool:
    """Say whether ``exc`` is SQLite saying another connection holds a lock it needs.

    :param exc: what a job raised.
    :returns: True for SQLITE_BUSY and SQLITE_LOCKED, with any extended code.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.OperationalError)
        and code is not None
        and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    )
