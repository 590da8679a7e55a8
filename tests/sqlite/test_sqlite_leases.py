"""The writer lease (docs/reference/core.md#writer-lease), within one process and between two real
processes."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from hermes_sqlite.store import SqliteStorage
from tests.timing import scaled

from .helpers import record, user

CHILD = Path(__file__).with_name("lease_child.py")


async def test_a_lease_is_exclusive_until_released(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))

    assert await storage.acquire_lease("s1", "host:1:aaa", 30) is None
    assert await storage.acquire_lease("s1", "host:2:bbb", 30) == "host:1:aaa"
    assert await storage.acquire_lease("s1", "host:1:aaa", 30) is None  # the holder again

    await storage.release_lease("s1", "host:2:bbb")  # not ours: no effect
    assert await storage.acquire_lease("s1", "host:2:bbb", 30) == "host:1:aaa"

    await storage.release_lease("s1", "host:1:aaa")
    assert await storage.acquire_lease("s1", "host:2:bbb", 30) is None


async def test_take_over_replaces_only_the_named_holder(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    assert await storage.acquire_lease("s1", "host:1:dead", 30) is None
    # Someone else got there first: naming the old holder no longer takes the lease.
    assert await storage.acquire_lease("s1", "host:2:new", 30, take_over="host:9:other") == "host:1:dead"
    assert await storage.acquire_lease("s1", "host:2:new", 30, take_over="host:1:dead") is None
    assert await storage.acquire_lease("s1", "host:3:late", 30, take_over="host:1:dead") == "host:2:new"
    assert await storage.renew_lease("s1", "host:1:dead", 30) is False


async def test_renew_works_only_for_the_holder(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    await storage.acquire_lease("s1", "me", 30)

    assert await storage.renew_lease("s1", "me", 30) is True
    assert await storage.renew_lease("s1", "someone", 30) is False
    await storage.release_lease("s1", "me")
    assert await storage.renew_lease("s1", "me", 30) is False


async def test_an_expired_lease_can_be_taken_over(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    assert await storage.acquire_lease("s1", "sleepy", 0.2) is None
    assert await storage.acquire_lease("s1", "eager", 30) == "sleepy"

    await asyncio.sleep(0.3)

    assert await storage.acquire_lease("s1", "eager", 30) is None
    assert await storage.renew_lease("s1", "sleepy", 30) is False
    assert await storage.acquire_lease("s1", "sleepy", 30) == "eager"


async def test_renewing_keeps_a_lease_alive(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    # Each renewal comes half a TTL after the last; on a loaded machine both stretch together.
    ttl = scaled(0.3)
    await storage.acquire_lease("s1", "me", ttl)
    for _ in range(3):
        await asyncio.sleep(ttl / 2)
        assert await storage.renew_lease("s1", "me", ttl)
    assert await storage.acquire_lease("s1", "other", 30) == "me"


async def test_leasing_an_unstored_id_reserves_it_invisibly(storage: SqliteStorage) -> None:
    assert await storage.acquire_lease("new", "me", 30) is None

    assert await storage.get_session("new") is None
    assert (await storage.list_sessions(hidden_sources=())).sessions == []
    assert await storage.acquire_lease("new", "other", 30) == "me"

    ids = await storage.create_session(record("new", title="Fresh"), [user("first")])

    got = await storage.get_session("new")
    assert got is not None and got.title == "Fresh" and got.message_count == 1
    assert await storage.find_session_by_title("Fresh") == got
    assert [r.id for r in await storage.load_rows("new")] == ids
    assert await storage.acquire_lease("new", "other", 30) == "me"  # creating kept the lease


async def test_releasing_an_unused_reservation_forgets_it(storage: SqliteStorage) -> None:
    await storage.acquire_lease("new", "me", 30)
    await storage.release_lease("new", "me")

    assert await storage.acquire_lease("new", "other", 30) is None
    await storage.release_lease("new", "other")
    await storage.create_session(record("new"))
    assert await storage.get_session("new") is not None


@asynccontextmanager
async def child_process(
    db_path: Path, session_id: str, owner: str, ttl_s: float
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Run lease_child.py; yield it once it has reported taking the lease."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(db_path),
        session_id,
        owner,
        str(ttl_s),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert await read_line(proc) == "acquired None"
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def read_line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 20)
    return line.decode().strip()


async def send(proc: asyncio.subprocess.Process, command: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(command.encode() + b"\n")
    await proc.stdin.drain()


async def test_another_process_holds_the_lease_until_it_releases(
    storage: SqliteStorage, db_path: Path
) -> None:
    async with child_process(db_path, "shared", "otherhost:4242:cafe", 30) as child:
        # The child reserved an id nobody had stored: we must not be able to create it too.
        assert await storage.acquire_lease("shared", "thishost:1:beef", 30) == "otherhost:4242:cafe"
        assert await storage.get_session("shared") is None

        await send(child, "create")
        created = (await read_line(child)).split()
        assert created[0] == "created"
        got = await storage.get_session("shared")
        assert got is not None and got.message_count == 2
        assert [str(r.id) for r in await storage.load_rows("shared")] == created[1:]
        assert await storage.acquire_lease("shared", "thishost:1:beef", 30) == "otherhost:4242:cafe"

        await send(child, "release")
        assert await read_line(child) == "released"
        assert await storage.acquire_lease("shared", "thishost:1:beef", 30) is None

        await send(child, "exit")
        assert await asyncio.wait_for(child.wait(), 20) == 0


async def test_a_crashed_process_lease_expires(storage: SqliteStorage, db_path: Path) -> None:
    ttl = 1.5
    async with child_process(db_path, "shared", "otherhost:4242:dead", ttl) as child:
        taken = time.time()
        await send(child, "create")
        assert (await read_line(child)).startswith("created")
        await send(child, "crash")  # exits without releasing or closing
        await asyncio.wait_for(child.wait(), 20)

    if time.time() - taken < ttl - 0.2:
        assert await storage.acquire_lease("shared", "thishost:1:beef", 30) == "otherhost:4242:dead"
    await asyncio.sleep(max(0.0, taken + ttl + 0.1 - time.time()))

    assert await storage.acquire_lease("shared", "thishost:1:beef", 30) is None
    # What the crashed process committed is all there.
    assert [r.content for r in await storage.load_rows("shared")] == ["hi", "hello"]


async def test_two_storages_racing_for_a_new_id_get_one_winner(db_path: Path) -> None:
    from hermes_sqlite.plugin import make_storage

    first, second = make_storage(path=db_path), make_storage(path=db_path)
    await first.open()
    await second.open()
    try:
        results = await asyncio.gather(
            first.acquire_lease("race", "a:1:x", 30), second.acquire_lease("race", "b:2:y", 30)
        )
    finally:
        await first.close()
        await second.close()
    # Either the first won and the second was told so, or the other way round.
    assert results in ([None, "a:1:x"], ["b:2:y", None])
