"""Open a Hermes SQLite database: connection settings, schema creation and migrations.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[n]`` upgrades a database at
version ``n`` to ``n + 1``; version 0 is an empty file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core import StorageError

SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 5000
# How many WAL pages (4 KiB each) a commit may leave before it copies them into the database
# (SQLite's default is 1,000). An append rewrites the same few pages again and again, and a
# checkpoint copies each page once however often the WAL holds it, so a longer WAL costs less
# per row: one-row append transactions ran at 11,000 rows/s with 1,000 pages and 13,500 with
# 8,000 on the 2-core reference machine. The price is a WAL file of up to 32 MiB beside the
# database while it is open, and a longer checkpoint now and then. The database thread runs
# that checkpoint itself (hermes_sqlite.wal_watch): the connection's automatic one is off, as it
# would run inside whichever COMMIT crossed the length, and small jobs may commit on the loop.
WAL_CHECKPOINT_PAGES = 8000

_SCHEMA_V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    placeholder INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    profile TEXT NOT NULL DEFAULT '',
    model TEXT,
    provider TEXT,
    reasoning_effort TEXT,
    title TEXT,
    title_origin TEXT,
    parent_session_id TEXT,
    channel_key TEXT,
    system_overlay TEXT,
    usage TEXT,
    extra TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    lease_owner TEXT,
    lease_heartbeat_at REAL,
    lease_expires_at REAL
);
CREATE INDEX sessions_by_activity ON sessions (updated_at, id);
CREATE INDEX sessions_by_channel ON sessions (channel_key);
CREATE INDEX sessions_by_title ON sessions (title);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    parts TEXT,
    tool_calls TEXT,
    call_id TEXT,
    provider_call_id TEXT,
    tool_name TEXT,
    display_kind TEXT,
    active INTEGER NOT NULL DEFAULT 1,
    archived_reason TEXT,
    model TEXT,
    reasoning TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    meta TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX messages_by_session ON messages (session_id, active, position, id);
"""


def _create_v1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V1.split(";"):
        if statement.strip():
            conn.execute(statement)


# Version 2 drops AUTOINCREMENT from messages.id. It made every commit also rewrite the
# sqlite_sequence page: on the 2-core reference machine a one-row append transaction took
# 36 µs with it and 30 µs without. Ids still never repeat: message rows are never deleted, so
# max(id) + 1 is always an id nobody has had (see DbState.claim_ids).
_V1_MESSAGES = _SCHEMA_V1[_SCHEMA_V1.index("CREATE TABLE messages") :].split(";", 1)[0]
# The same columns in the same order (the copy below is a SELECT *), minus AUTOINCREMENT.
_MESSAGES_V2 = _V1_MESSAGES.replace("CREATE TABLE messages (", "CREATE TABLE messages_v2 (", 1).replace(
    "id INTEGER PRIMARY KEY AUTOINCREMENT,", "id INTEGER PRIMARY KEY,", 1
)


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Rebuild ``messages`` without AUTOINCREMENT, keeping every row and its id."""
    conn.execute(_MESSAGES_V2)
    conn.execute("INSERT INTO messages_v2 SELECT * FROM messages ORDER BY id")
    conn.execute("DROP TABLE messages")
    conn.execute("ALTER TABLE messages_v2 RENAME TO messages")
    conn.execute("CREATE INDEX messages_by_session ON messages (session_id, active, position, id)")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'messages'")


# Version 3 adds what the kernel keeps for plugins and transports besides sessions: durable
# records (docs/reference/core.md#records) and every session's event log (#the-event-log).
_SCHEMA_V3 = """
CREATE TABLE records (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    data TEXT NOT NULL,
    scope TEXT NOT NULL DEFAULT '',
    owner TEXT,
    epoch INTEGER NOT NULL,
    version INTEGER NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX records_by_activity ON records (namespace, updated_at, key);
CREATE INDEX records_by_scope ON records (namespace, scope, updated_at);
CREATE INDEX records_by_owner ON records (namespace, owner) WHERE owner IS NOT NULL;
CREATE INDEX records_by_expiry ON records (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE event_chunks (
    session_id TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE UNIQUE INDEX event_chunks_by_session ON event_chunks (session_id, last_seq);
"""


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V3.split(";"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _create_v1, 1: _v1_to_v2, 2: _v2_to_v3}


def _casefold(value: str | None) -> str | None:
    # SQLite's lower() folds ASCII only; titles are often not ASCII.
    return value.casefold() if isinstance(value, str) else None


def describe_error(path: Path, exc: BaseException, *, opening: bool = False) -> str:
    """Explain a database failure, naming the path and, where we can tell, what to do.

    :param path: the database file.
    :param exc: the underlying error.
    :param opening: whether it happened while opening the database.
    :returns: a message for ``StorageError``.
    """
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        advice = "move it aside or set storage.path"
    elif "readonly" in lowered or "read-only" in lowered or "permission" in lowered:
        advice = "check the permissions of the file and its folder, or set storage.path"
    elif "unable to open" in lowered:
        advice = "check that the folder exists and is writable, or set storage.path"
    elif "locked" in lowered or "busy" in lowered:
        advice = "another process is holding the database; try again"
    elif "disk" in lowered and "full" in lowered:
        advice = "free some disk space"
    else:
        advice = "move it aside or set storage.path" if opening else ""
    prefix = "cannot open database at" if opening else "storage error at"
    return f"{prefix} {path}: {text}" + (f"; {advice}" if advice else "")


class _Grouping(threading.local):
    """Whether the database thread is running jobs inside one group transaction (see
    :mod:`hermes_sqlite.worker`): per thread, as each connection has a thread of its own. A job
    run inline on the event loop is never part of a group, and reads False there."""

    active = False


#: Set by the database thread around a group of jobs it commits together.
GROUPING = _Grouping()


def begin(cursor: sqlite3.Cursor) -> None:
    """Start a job's write transaction: ``BEGIN IMMEDIATE``, or a savepoint inside a group."""
    cursor.execute("SAVEPOINT hermes_write" if GROUPING.active else "BEGIN IMMEDIATE")


def commit(cursor: sqlite3.Cursor) -> None:
    """End a job's write transaction (inside a group the group's COMMIT makes it durable)."""
    cursor.execute("RELEASE hermes_write" if GROUPING.active else "COMMIT")


def rollback(conn: sqlite3.Connection, cursor: sqlite3.Cursor) -> None:
    """Undo a job's write transaction, if SQLite has not already rolled it back."""
    if not conn.in_transaction:
        return
    if GROUPING.active:
        cursor.execute("ROLLBACK TO hermes_write")
        cursor.execute("RELEASE hermes_write")
    else:
        cursor.execute("ROLLBACK")


class _WriteTransaction:
    """The context manager :func:`write_transaction` returns.

    A class rather than a ``contextlib`` generator: it is entered once per append, and the
    generator version cost about 2 µs more per transaction.
    """

    __slots__ = ("_conn", "_cursor")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._cursor = conn.cursor()

    def __enter__(self) -> None:
        begin(self._cursor)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc_type is None:
            try:
                commit(self._cursor)
                return
            except BaseException:
                rollback(self._conn, self._cursor)
                raise
        rollback(self._conn, self._cursor)


def write_transaction(conn: sqlite3.Connection) -> _WriteTransaction:
    """Run the body of a ``with`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any error.

    Inside a group of jobs the database thread commits together, the body is a savepoint of
    the group's transaction instead: its failure undoes only its own writes.

    :param conn: an autocommit-mode connection.
    :returns: the context manager.
    """
    return _WriteTransaction(conn)


def _prepare_file(path: Path) -> None:
    """Create the folder and an empty private database file if neither exists yet."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"cannot create the folder of the database at {path}: {exc.strerror or exc}; "
            "set storage.path to a writable location"
        ) from None
    if path.exists():
        return
    try:
        # Conversations are private; SQLite gives the -wal/-shm files the same mode.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    except FileExistsError:
        pass  # another process created it just now
    except OSError as exc:
        raise StorageError(
            f"cannot create database at {path}: {exc.strerror or exc}; "
            "check that the folder is writable, or set storage.path"
        ) from None


READ_ONLY_TRIES = 8  # SQLITE_PROTOCOL on a read-only WAL open is transient: try again, briefly


def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """Open, configure and migrate the database at ``path``.

    A read-only open of a WAL database can fail with SQLITE_PROTOCOL ("locking protocol") while a
    writer starts or stops (the reader may not rebuild the shared index itself); that open is
    tried again a few times, 10 ms apart and doubling, before the error is reported.

    :param path: the database file; its folder is created when missing (not when read-only).
    :param read_only: open without write access and without migrating.
    :returns: an autocommit-mode connection, not tied to the thread that opened it (one thread
        at a time may use it).
    :raises StorageError: naming the path when the file cannot be used.
    """
    if read_only and not path.exists():
        return _empty_read_only()
    if not read_only:
        _prepare_file(path)
        return _open(path, read_only=False)
    delay = 0.01
    for attempt in range(READ_ONLY_TRIES):
        try:
            return _open(path, read_only=True)
        except _Transient:
            if attempt == READ_ONLY_TRIES - 1:
                break
            time.sleep(delay)  # on the storage thread or a CLI check, never the event loop
            delay *= 2
    raise StorageError(f"cannot open database at {path} read-only: it stayed locked (locking protocol)")


class _Transient(Exception):
    """A read-only open met SQLITE_PROTOCOL; the caller tries again."""


def _open(path: Path, *, read_only: bool) -> sqlite3.Connection:
    # The database thread owns the connection but lends it to the event loop for small jobs
    # while it is idle (hermes_sqlite.worker): its lock, not the thread, keeps them apart.
    conn: sqlite3.Connection | None = None
    try:
        if read_only:
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro",
                uri=True,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
            )
        else:
            conn = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        # Reading the schema is what detects a file that is not a database.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        if not read_only:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # see WAL_CHECKPOINT_PAGES
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.create_function("hermes_casefold", 1, _casefold, deterministic=True)
        _migrate(conn, path, read_only=read_only)
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if read_only and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_PROTOCOL:
            raise _Transient from None
        raise StorageError(describe_error(path, exc, opening=True)) from None
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def _empty_read_only() -> sqlite3.Connection:
    """Return an empty, current-schema, in-memory database that refuses writes.

    A read-only open of a database that does not exist yet reads as a store with no sessions
    (``hermes acp --check`` on a fresh machine), and creates nothing on disk.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.create_function("hermes_casefold", 1, _casefold, deterministic=True)
    _migrate(conn, Path(":memory:"), read_only=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _migrate(conn: sqlite3.Connection, path: Path, *, read_only: bool) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`, one transaction per step."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"cannot open database at {path}: it has schema version {version}, newer than this "
            f"Hermes supports ({SCHEMA_VERSION}); upgrade Hermes or set storage.path"
        )
    if version == SCHEMA_VERSION:
        return
    if read_only:
        raise StorageError(
            f"cannot open database at {path} read-only: schema version {version} needs migrating "
            f"to {SCHEMA_VERSION}; open it once with write access"
        )
    while version < SCHEMA_VERSION:
        with write_transaction(conn):
            # Re-read inside the write lock: another process may have migrated meanwhile.
            current = conn.execute("PRAGMA user_version").fetchone()[0]
            if current == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise StorageError(
                    f"cannot open database at {path}: it holds tables that are not a Hermes store; "
                    "move it aside or set storage.path"
                )
            if current == version:
                MIGRATIONS[version](conn)
                conn.execute(f"PRAGMA user_version = {version + 1}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
