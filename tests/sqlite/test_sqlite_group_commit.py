"""Group commit on the database thread: writes queued together share one transaction, a failing
job fails alone, and nothing is reported stored that the group's commit did not make durable."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_sqlite.schema import write_transaction
from hermes_sqlite.store import SqliteStorage
from hermes_sqlite.worker import DbThread

from .helpers import record, user


def _opener(path: Path, commits: list[str]) -> DbThread:
    def open_() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)")
        conn.set_trace_callback(lambda sql: commits.append(sql) if sql.strip() == "COMMIT" else None)
        return conn

    return DbThread("test-db", open_)


def _insert(key: str, fail: bool = False) -> Callable[[sqlite3.Connection], str]:
    def job(conn: sqlite3.Connection) -> str:
        with write_transaction(conn):
            conn.execute("INSERT INTO t VALUES (?)", (key,))
            if fail:
                raise ValueError(f"job {key} fails after its insert")
        return key

    return job


async def _queued_behind_a_blocker(thread: DbThread, jobs: list, group: bool = True) -> list:  # type: ignore[type-arg]
    """Queue ``jobs`` while the thread is busy, so they are all waiting when it looks."""
    gate = threading.Event()
    blocker = thread.call(lambda _conn: gate.wait(10))
    futures = [thread.call(job, group=group) for job in jobs]
    gate.set()
    await blocker
    return await asyncio.gather(*futures, return_exceptions=True)


def _keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {k for (k,) in conn.execute("SELECT k FROM t")}


async def test_writes_queued_together_share_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    commits: list[str] = []
    thread = _opener(path, commits)
    await thread.start()
    try:
        results = await _queued_behind_a_blocker(thread, [_insert(f"k{i}") for i in range(20)])
        assert results == [f"k{i}" for i in range(20)]
        assert len(commits) == 1, commits  # one transaction for all twenty
        assert _keys(path) == {f"k{i}" for i in range(20)}
        commits.clear()
        results = await _queued_behind_a_blocker(thread, [_insert(f"u{i}") for i in range(5)], group=False)
        assert len(commits) == 5  # jobs not marked for grouping keep their own transactions
    finally:
        await thread.stop(lambda _conn: None)


async def test_a_failing_job_in_a_group_fails_alone(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    thread = _opener(path, [])
    await thread.start()
    try:
        jobs = [_insert("a"), _insert("b", fail=True), _insert("c"), _insert("a")]  # the last: duplicate key
        results = await _queued_behind_a_blocker(thread, jobs)
        assert results[0] == "a" and results[2] == "c"
        assert isinstance(results[1], ValueError)
        assert isinstance(results[3], sqlite3.IntegrityError)
        assert _keys(path) == {"a", "c"}
    finally:
        await thread.stop(lambda _conn: None)


async def test_jobs_undone_with_the_group_are_never_reported_stored(tmp_path: Path) -> None:
    """When SQLite rolls the whole group back (as on a full disk), the jobs before the failing
    one lose their writes too: they must fail, not report success."""
    path = tmp_path / "g.sqlite3"
    thread = _opener(path, [])
    await thread.start()

    def wrecks_the_transaction(conn: sqlite3.Connection) -> None:
        conn.execute("ROLLBACK")  # what SQLite does by itself on some errors
        raise sqlite3.OperationalError("database or disk is full")

    try:
        results = await _queued_behind_a_blocker(thread, [_insert("a"), wrecks_the_transaction, _insert("c")])
        assert isinstance(results[0], sqlite3.OperationalError), results
        assert isinstance(results[1], sqlite3.OperationalError)
        assert results[2] == "c"  # after the wreck, the rest run on their own
        assert _keys(path) == {"c"}
    finally:
        await thread.stop(lambda _conn: None)


@pytest.mark.parametrize("sessions", [50])
async def test_a_burst_of_appends_across_sessions_is_stored_whole(tmp_path: Path, sessions: int) -> None:
    """Many sessions' first rows at once (the API's burst): every id answered is stored."""
    storage = SqliteStorage(tmp_path / "h.sqlite3")
    await storage.open()
    try:
        await asyncio.gather(*(storage.create_session(record(f"s{i}")) for i in range(sessions)))
        ids = await asyncio.gather(*(storage.append_rows(f"s{i}", [user(f"m{i}")]) for i in range(sessions)))
        fresh = SqliteStorage(tmp_path / "h.sqlite3")
        await fresh.open()
        try:
            for i, (row_id,) in enumerate(ids):
                rows = await fresh.load_rows(f"s{i}")
                assert [(r.id, r.content) for r in rows] == [(row_id, f"m{i}")]
        finally:
            await fresh.close()
    finally:
        await storage.close()


async def test_a_grouped_write_is_committed_when_its_caller_hears_of_it(tmp_path: Path) -> None:
    """The first job of a group answers only once the whole group is committed: another
    connection (or a process started after a kill -9) already sees its row."""
    path = tmp_path / "g.sqlite3"
    thread = _opener(path, [])
    await thread.start()
    try:
        gate = threading.Event()
        blocker = thread.call(lambda _conn: gate.wait(10))
        futures = [thread.call(_insert(f"k{i}"), group=True) for i in range(20)]
        gate.set()
        await blocker
        assert await futures[0] == "k0"
        assert {"k0", "k19"} <= _keys(path)  # read at once, from a connection of its own
        await asyncio.gather(*futures)
    finally:
        await thread.stop(lambda _conn: None)


async def test_writes_submitted_in_one_loop_step_share_one_commit(tmp_path: Path) -> None:
    """Jobs submitted in one step reach an idle thread together: one hand-off, one group.

    Between the submissions the loop is held up until the first job has run or a moment has
    passed: a thread woken by the first submission alone would have run it in a transaction of
    its own by then.
    """
    path = tmp_path / "g.sqlite3"
    commits: list[str] = []
    thread = _opener(path, commits)
    await thread.start()
    try:
        ran = threading.Event()
        first = _insert("first")

        def first_job(conn: sqlite3.Connection) -> str:
            ran.set()
            return first(conn)

        futures = [thread.call(first_job, group=True)]
        ran.wait(0.2)  # blocks the loop on purpose: nothing else may be submitted meanwhile
        futures += [thread.call(_insert(f"k{i}"), group=True) for i in range(4)]
        assert await asyncio.gather(*futures) == ["first", "k0", "k1", "k2", "k3"]
        assert len(commits) == 1, commits
    finally:
        await thread.stop(lambda _conn: None)


async def test_jobs_submitted_with_stop_run_before_the_thread_ends(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    thread = _opener(path, [])
    await thread.start()
    futures = [thread.call(_insert(f"k{i}"), group=True) for i in range(3)]
    await thread.stop(lambda _conn: None)
    assert await asyncio.gather(*futures) == ["k0", "k1", "k2"]
    assert _keys(path) == {"k0", "k1", "k2"}
