"""``kernel.events.read`` gives only what the log has stored, also for a session live in this
process (docs/reference/core.md#reading-the-log): on a real SQLite file whose log writes are held
back (a slow disk), a read never returns an event numbered above the stored end, and ``follow``
yields the rest once stored, without a gap or a repeat."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hermes_core import LogGap, TurnCompleted
from tests.held_log import hold_log_writes, sqlite_kernel
from tests.timing import eventually, scaled


async def test_a_read_of_a_live_session_stops_at_the_stored_end(tmp_path: Path) -> None:
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        disk, waiting = hold_log_writes(kernel.storage, open_now=True)
        session = await kernel.open_session("held", source="embed", owner="test", cwd=tmp_path)
        first = await session.submit("first, stored as it goes", owner="test")
        assert (await first.outcome).status == "complete"
        await kernel.events.flush()
        stored_before = kernel.events.stored(session.id)
        assert stored_before is not None and stored_before == kernel.events.head(session.id)
        follower = kernel.events.follow(session.id, after=stored_before)
        followed: list[Any] = []

        async def follow() -> None:
            async for item in follower:
                followed.append(item)
                if isinstance(item, TurnCompleted):
                    return

        try:
            disk.clear()
            turn = await session.submit("[[tokens 40]]", owner="test")
            assert (await turn.outcome).status == "complete"
            head = kernel.events.head(session.id)
            assert head is not None and head > stored_before
            await eventually(lambda: waiting, what="a log write to wait for the disk")
            stored = kernel.events.stored(session.id)
            assert stored is not None and stored < head
            # Every event of the turn was handed out, none stored: a read gives none of them.
            page = await kernel.events.read(session.id, after=0, limit=10_000)
            seqs = [i.seq for i in page.items if not isinstance(i, LogGap)]
            assert seqs and max(seqs) <= stored, (max(seqs), stored, head)
            assert page.head == head and page.durable == stored and not page.more
            # A cursor the log has handed out but not stored is no error: nothing yet.
            assert (await kernel.events.read(session.id, after=head)).items == []
            assert (await kernel.events.read(session.id, after=stored)).items == []
            # A follower started now (the turn handed out, not stored) yields none of it yet…
            task = asyncio.create_task(follow())
            await asyncio.sleep(0.01)
            assert followed == []

            # …and all of it, once, when the log has stored it.
            disk.set()
            await asyncio.wait_for(task, scaled(10))
            numbers = [i.seq for i in followed]
            assert numbers == list(range(stored_before + 1, numbers[-1] + 1))
            assert numbers[-1] <= head and isinstance(followed[-1], TurnCompleted)
            await kernel.events.durable(session.id, head)
            page = await kernel.events.read(session.id, after=stored_before, limit=10_000)
            assert [i.seq for i in page.items] == list(range(stored_before + 1, head + 1))
        finally:
            disk.set()
            await follower.aclose()
            await session.close()


async def test_after_a_kill_9_the_cut_off_turns_end_is_read_once_stored(tmp_path: Path) -> None:
    """The end the restart gives a turn a ``kill -9`` cut off takes the number right after the
    stored events: until it is stored, a read gives none of it (a crash now would give that
    number to an end again, perhaps another one)."""
    from tests.event_log_crash import run_child_until_killed

    printed, _durable = await asyncio.to_thread(
        run_child_until_killed, "sqlite", str(tmp_path / "hermes.sqlite3"), "cut", tmp_path
    )
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        disk, waiting = hold_log_writes(kernel.storage, open_now=False)
        session = await kernel.open_session("cut", source="cli", owner="test")
        try:
            head = kernel.events.head("cut")
            stored = kernel.events.stored("cut")
            assert head is not None and stored is not None and head == stored + 1
            assert stored >= max(printed)  # what the child showed is stored
            await eventually(lambda: waiting, what="the end's write to wait for the disk")
            page = await kernel.events.read("cut", after=0, limit=10_000)
            assert page.items[-1].seq == stored and not page.more  # type: ignore[union-attr]
            assert not [i for i in page.items if isinstance(i, TurnCompleted)]
            assert (await kernel.events.read("cut", after=stored)).items == []
            disk.set()
            await kernel.events.durable("cut", head)
            page = await kernel.events.read("cut", after=stored)
            assert [type(i).__name__ for i in page.items] == ["TurnCompleted"]
            end = page.items[0]
            assert isinstance(end, TurnCompleted) and end.seq == head
            assert end.outcome.reason == "interrupted_by_system"
        finally:
            disk.set()
            await session.close()
