"""The database file: settings, restart, unusable paths, schema versions, plugin wiring."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import NewRow, StorageError, StorageSpec
from hermes_sqlite import plugin
from hermes_sqlite.plugin import make_storage
from hermes_sqlite.schema import SCHEMA_VERSION, WAL_CHECKPOINT_PAGES, _create_v1
from hermes_sqlite.store import SqliteStorage

from .helpers import assistant, record, user


async def test_wal_and_synchronous_normal(storage: SqliteStorage, db_path: Path) -> None:
    await storage.create_session(record("s1"), [user("hi")])

    # journal_mode=WAL is a property of the file: any other connection sees it.
    with sqlite3.connect(db_path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    # synchronous, foreign_keys and busy_timeout are per connection: ask the backend's own.
    info = await storage.diagnostics()
    assert info["journal_mode"] == "wal"
    assert info["synchronous"] == 1  # NORMAL
    assert info["foreign_keys"] is True
    assert info["busy_timeout_ms"] >= 1000
    assert info["path"] == str(db_path)


async def test_a_new_database_is_private_and_its_folder_is_created(
    storage: SqliteStorage, db_path: Path
) -> None:
    assert db_path.parent.is_dir()
    assert stat.S_IMODE(db_path.stat().st_mode) == 0o600


async def test_everything_survives_a_restart(db_path: Path) -> None:
    first = make_storage(path=db_path)
    await first.open()
    ids = await first.create_session(
        record("s1", title="Keep me", usage={"input": 7}), [user("u1"), assistant("a1"), user("u2")]
    )
    await first.rewrite("s1", archive_row_ids=[ids[2]], archived_reason="rewind")
    await first.update_row_meta(ids[1], {"status": "done"})
    await first.acquire_lease("s1", "me", 60)
    before = await first.get_session("s1")
    await first.close()

    second = make_storage(path=db_path)
    await second.open()
    try:
        assert await second.get_session("s1") == before
        rows = await second.load_rows("s1", include_archived=True)
        assert [(r.id, r.active, r.archived_reason) for r in rows] == [
            (ids[0], True, None),
            (ids[1], True, None),
            (ids[2], False, "rewind"),
        ]
        assert rows[1].meta == {"status": "done"}
        assert await second.acquire_lease("s1", "someone", 60) == "me"
        # Row ids keep growing; none is reused.
        more = await second.append_rows("s1", [user("u3")])
        assert more[0] > ids[-1]
    finally:
        await second.close()


async def test_a_corrupt_file_is_a_storage_error_naming_the_path(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database at all\n" * 200)
    store = make_storage(path=db_path)

    with pytest.raises(StorageError) as caught:
        await store.open()

    message = str(caught.value)
    assert str(db_path) in message
    assert "not a database" in message and "storage.path" in message
    with pytest.raises(StorageError):
        await store.get_session("s1")


async def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as caught:
        await make_storage(path=tmp_path).open()
    assert str(tmp_path) in str(caught.value)


async def test_an_impossible_folder_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    path = blocker / "hermes.sqlite3"

    with pytest.raises(StorageError) as caught:
        await make_storage(path=path).open()

    assert str(path) in str(caught.value) and "storage.path" in str(caught.value)


async def test_a_version_1_database_keeps_every_row_and_id_when_migrated(db_path: Path) -> None:
    # A database as the first release wrote it: messages.id was AUTOINCREMENT.
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as conn:
        _create_v1(conn)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO sessions (id, source, created_at, updated_at) VALUES ('old', 'cli', 1.0, 2.0)"
        )
        values = [
            (7, "old", 7, "user", "first", None, None, None, None, 1, None, '{"k":1}', 1.5),
            (8, "old", 8, "assistant", "second", "[]", "mock:echo", None, None, 1, None, None, 1.6),
            (9, "old", 9, "user", "third", None, None, None, None, 0, "rewind", None, 1.7),
        ]
        conn.executemany(
            "INSERT INTO messages (id, session_id, position, role, content, tool_calls, model, "
            "call_id, tool_name, active, archived_reason, meta, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )

    store = make_storage(path=db_path)
    await store.open()
    try:
        rows = await store.load_rows("old", include_archived=True)
        assert [(r.id, r.role, r.content, r.active, r.archived_reason) for r in rows] == [
            (7, "user", "first", True, None),
            (8, "assistant", "second", True, None),
            (9, "user", "third", False, "rewind"),
        ]
        assert dict(rows[0].meta) == {"k": 1} and rows[1].model == "mock:echo"
        # New rows continue after the highest id, archived ones included.
        assert await store.append_rows("old", [user("fourth")]) == [10]
    finally:
        await store.close()

    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        table_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages'").fetchone()[0]
        assert "AUTOINCREMENT" not in table_sql.upper()
        indexes = conn.execute(
            "SELECT name FROM sqlite_master WHERE tbl_name = 'messages' AND type = 'index'"
        )
        assert [name for (name,) in indexes] == ["messages_by_session"]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_the_wal_stays_bounded_under_many_small_commits(storage: SqliteStorage, db_path: Path) -> None:
    await storage.create_session(record("busy"), [])
    # One transaction per row writes two pages each: enough to pass the checkpoint length.
    for index in range(WAL_CHECKPOINT_PAGES // 2 + 1000):
        await storage.append_rows("busy", [user(f"row {index}")])

    wal = db_path.with_name(db_path.name + "-wal")
    frame = 4096 + 24
    assert wal.stat().st_size <= (WAL_CHECKPOINT_PAGES + 50) * frame + 32
    assert len(await storage.load_rows("busy")) == WAL_CHECKPOINT_PAGES // 2 + 1000


async def test_a_newer_schema_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA user_version = 99")

    with pytest.raises(StorageError, match="newer") as caught:
        await make_storage(path=db_path).open()
    assert str(db_path) in str(caught.value)


async def test_someone_elses_database_is_refused_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")

    with pytest.raises(StorageError, match="not a Hermes store"):
        await make_storage(path=db_path).open()

    with sqlite3.connect(db_path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["invoices"]


async def test_calls_before_open_and_after_close_fail_cleanly(db_path: Path) -> None:
    store = make_storage(path=db_path)
    with pytest.raises(StorageError, match="not open"):
        await store.get_session("s1")

    await store.open()
    await store.create_session(record("s1"))
    await store.close()
    await store.close()  # twice is fine

    with pytest.raises(StorageError, match="closed"):
        await store.append_rows("s1", [user("late")])
    with pytest.raises(StorageError, match="closed"):
        await store.open()


async def test_close_finishes_work_already_queued(db_path: Path) -> None:
    import asyncio

    store = make_storage(path=db_path)
    await store.open()
    await store.create_session(record("s1"))
    pending = [asyncio.ensure_future(store.append_rows("s1", [user(str(i))])) for i in range(50)]
    await asyncio.sleep(0)  # let every append queue its job

    await store.close()

    assert len({(await p)[0] for p in pending}) == 50
    reopened = make_storage(path=db_path)
    await reopened.open()
    try:
        assert len(await reopened.load_rows("s1")) == 50
    finally:
        await reopened.close()


async def test_read_only_reads_but_does_not_write(db_path: Path) -> None:
    # A database that does not exist yet reads as empty, refuses writes and is not created.
    missing = make_storage(path=db_path, read_only=True)
    await missing.open()
    try:
        assert (await missing.list_sessions(limit=5)).sessions == []
        with pytest.raises(StorageError):
            await missing.create_session(record("s0"), [user("no")])
    finally:
        await missing.close()
    assert not db_path.exists() and not db_path.parent.joinpath(db_path.name + "-wal").exists()

    writer = make_storage(path=db_path)
    await writer.open()
    await writer.create_session(record("s1"), [user("hi")])
    await writer.close()

    reader = make_storage(path=db_path, read_only=True)
    await reader.open()
    try:
        assert [r.content for r in await reader.load_rows("s1")] == ["hi"]
        with pytest.raises(StorageError, match=str(db_path)):
            await reader.append_rows("s1", [NewRow(role="user", content="no")])
    finally:
        await reader.close()


def test_the_plugin_declares_the_sqlite_backend(tmp_path: Path) -> None:
    spec = plugin.hermes_storage_backends()

    assert isinstance(spec, StorageSpec) and spec.name == "sqlite"
    built = spec.factory(path=tmp_path / "x.sqlite3")
    assert isinstance(built, SqliteStorage) and built.path == tmp_path / "x.sqlite3"


def test_importing_the_plugin_module_is_cheap() -> None:
    code = (
        "import sys, hermes_sqlite.plugin\n"
        "heavy = [m for m in ('sqlite3', 'hermes_sqlite.store', 'pydantic', 'aiohttp') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout.strip() == ""


def _protocol_error() -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError("locking protocol")
    exc.sqlite_errorcode = sqlite3.SQLITE_PROTOCOL  # type: ignore[attr-defined]
    return exc


def _flaky_connect(failures: int) -> tuple[list[str], object]:
    real = sqlite3.connect
    calls: list[str] = []

    def connect(target: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        calls.append(str(target))
        if len(calls) <= failures:
            raise _protocol_error()
        return real(target, *args, **kwargs)  # type: ignore[arg-type]

    return calls, connect


async def test_a_read_only_open_that_meets_locking_protocol_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite3"
    writer = make_storage(path)
    await writer.open()
    await writer.create_session(record("s-1"))
    await writer.close()
    calls, flaky = _flaky_connect(failures=2)
    monkeypatch.setattr("hermes_sqlite.schema.sqlite3.connect", flaky)
    reader = make_storage(path, read_only=True)
    await reader.open()
    try:
        assert await reader.get_session("s-1") is not None
    finally:
        await reader.close()
    assert len(calls) == 3 and all("mode=ro" in c for c in calls)


async def test_a_read_only_open_that_stays_locked_is_a_clear_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite3"
    writer = make_storage(path)
    await writer.open()
    await writer.close()
    calls, flaky = _flaky_connect(failures=100)
    monkeypatch.setattr("hermes_sqlite.schema.sqlite3.connect", flaky)
    monkeypatch.setattr("hermes_sqlite.schema.time.sleep", lambda _s: None)
    reader = make_storage(path, read_only=True)
    with pytest.raises(StorageError, match="locking protocol"):
        await reader.open()
    assert len(calls) == 8
