"""Session activity: appends move ``updated_at`` at least once a second, and listings follow it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from hermes_sqlite.activity import INTERVAL_S
from hermes_sqlite.plugin import make_storage
from hermes_sqlite.store import SqliteStorage

from .helpers import record, user


async def updated_at(storage: SqliteStorage, session_id: str) -> float:
    got = await storage.get_session(session_id)
    assert got is not None
    return got.updated_at


async def listed(storage: SqliteStorage) -> list[str]:
    return [s.id for s in (await storage.list_sessions()).sessions]


async def test_appends_order_sessions_by_activity_at_one_second_granularity(storage: SqliteStorage) -> None:
    await storage.create_session(record("a", updated_at=100.0))
    await storage.create_session(record("b", updated_at=200.0))
    assert await listed(storage) == ["b", "a"]

    # A session's first append always moves it to the top.
    before = time.time()
    await storage.append_rows("a", [user("1")])
    first = await updated_at(storage, "a")
    assert before <= first <= time.time()
    assert await listed(storage) == ["a", "b"]
    await storage.append_rows("b", [user("2")])
    assert await listed(storage) == ["b", "a"]

    # Within the second, a's updated_at is not rewritten (this is the granularity: b, active a
    # moment earlier, stays on top) ...
    await storage.append_rows("a", [user("3")])
    if time.time() - first < INTERVAL_S:
        assert await updated_at(storage, "a") == first
    # ... but activity that goes on for longer than that moves it again.
    await asyncio.sleep(max(0.0, first + INTERVAL_S + 0.05 - time.time()))
    await storage.append_rows("a", [user("4")])
    assert await updated_at(storage, "a") >= first + INTERVAL_S
    assert await listed(storage) == ["a", "b"]
    assert [s.message_count for s in (await storage.list_sessions()).sessions] == [3, 1]


async def test_an_append_after_an_explicit_updated_at_still_bumps(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    await storage.append_rows("s1", [user("one")])

    await storage.update_session("s1", {"updated_at": 100.0})
    assert await updated_at(storage, "s1") == 100.0
    await storage.append_rows("s1", [user("two")])

    assert await updated_at(storage, "s1") > time.time() - 60


async def test_an_append_after_another_process_moved_updated_at_still_bumps(
    storage: SqliteStorage, db_path: Path
) -> None:
    await storage.create_session(record("s1"))
    await storage.append_rows("s1", [user("one")])  # bumped here just now

    other = make_storage(path=db_path)
    await other.open()
    try:
        await other.update_session("s1", {"updated_at": 100.0})
    finally:
        await other.close()
    await storage.append_rows("s1", [user("two")])

    assert await updated_at(storage, "s1") > time.time() - 60


async def test_a_rewrite_bumps_and_an_append_after_its_own_updated_at_bumps_again(
    storage: SqliteStorage,
) -> None:
    ids = await storage.create_session(record("s1", updated_at=100.0), [user("one"), user("two")])
    await storage.append_rows("s1", [user("three")])
    appended = await updated_at(storage, "s1")

    await storage.rewrite("s1", archive_row_ids=ids[1:], archived_reason="rewind")
    assert await updated_at(storage, "s1") >= appended

    await storage.rewrite("s1", append=[user("four")], session_fields={"updated_at": 150.0})
    assert await updated_at(storage, "s1") == 150.0
    await storage.append_rows("s1", [user("five")])
    assert await updated_at(storage, "s1") >= appended
