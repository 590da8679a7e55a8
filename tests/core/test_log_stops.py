"""A session's event log that stops before storing what it numbered (docs/reference/core.md#reading-the-log):
a close that times out, a close whose caller is cancelled, a log that gives up on failing
storage. Whatever the path, no read, follow or ``durable`` gives out an event the log did not
store, and nobody waiting for one hangs: they get ``EventLogStopped`` with the stored end.

Real SQLite files, with the log's writes held back (a slow disk) or failing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hermes_core import EventLogStopped, LogGap, StorageError
from tests.held_log import hold_log_writes, sqlite_kernel
from tests.timing import eventually, scaled


async def stored_end(storage: Any, session_id: str) -> int:
    last = await storage.last_event_chunk(session_id)
    return last.last_seq if last is not None else 0


def numbers(items: list[Any]) -> list[int]:
    return [item.seq for item in items if not isinstance(item, LogGap)]


async def test_a_close_that_times_out_hands_out_nothing_it_did_not_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_core.event_log import owner

    monkeypatch.setattr(owner, "CLOSE_TIMEOUT_S", 0.2)
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        storage: Any = kernel.storage
        disk, waiting = hold_log_writes(storage, open_now=True)
        session = await kernel.open_session("held", source="embed", owner="test", cwd=tmp_path)
        assert (await (await session.submit("first", owner="test")).outcome).status == "complete"
        await kernel.events.flush()
        base = kernel.events.stored(session.id)
        assert base is not None and base == kernel.events.head(session.id)
        # A follower in its live part: each event it gets from the bus waits to be stored.
        followed: list[Any] = []
        ended: list[BaseException | None] = []

        async def follow() -> None:
            try:
                async for item in kernel.events.follow(session.id, after=base):
                    followed.append((item, await stored_end(storage, session.id)))
                ended.append(None)
            except BaseException as exc:
                ended.append(exc)

        follower = asyncio.create_task(follow())
        try:
            disk.clear()
            turn = await session.submit("[[tokens 20]]", owner="test")
            assert (await turn.outcome).status == "complete"
            head = kernel.events.head(session.id)
            assert head is not None and head > base
            await eventually(lambda: waiting, what="a log write waiting for the disk")
            waiter = asyncio.create_task(kernel.events.durable(session.id, head))
            # The close gives up on the held write after its timeout.
            await asyncio.wait_for(session.close(), scaled(5))
            await asyncio.wait_for(follower, scaled(5))
            # Nothing the log did not store was handed out, and nobody was told it was stored.
            assert followed == [], [(getattr(i, "seq", i), s) for i, s in followed]
            assert isinstance(ended[0], EventLogStopped) and ended[0].stored == base, ended
            with pytest.raises(EventLogStopped) as stopped:
                await asyncio.wait_for(waiter, scaled(5))
            assert (stopped.value.seq, stopped.value.stored) == (head, base)
            assert isinstance(stopped.value, StorageError)
            # Closed: still known to have stopped short, for a transport that holds a number.
            assert kernel.events.stored(session.id) == base
            with pytest.raises(EventLogStopped):
                await kernel.events.durable(session.id, base + 1)
            await kernel.events.durable(session.id, base)  # stored: at once
            page = await kernel.events.read(session.id, after=0, limit=10_000)
            assert max(numbers(page.items)) <= await stored_end(storage, session.id)
        finally:
            disk.set()
            follower.cancel()
        # Opened again, the numbers are the new log's: nothing is remembered against them.
        again = await kernel.open_session("held", source="embed", owner="test", cwd=tmp_path)
        assert kernel.events.stored("held") == await stored_end(storage, "held")
        await again.close()


async def test_a_cancelled_close_still_ends_the_log_before_it_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_core.event_log import owner

    monkeypatch.setattr(owner, "CLOSE_TIMEOUT_S", 0.3)
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        storage: Any = kernel.storage
        disk, waiting = hold_log_writes(storage, open_now=True)
        session = await kernel.open_session("cancelled", source="embed", owner="test", cwd=tmp_path)
        assert (await (await session.submit("first", owner="test")).outcome).status == "complete"
        await kernel.events.flush()
        base = kernel.events.stored(session.id)
        try:
            disk.clear()
            assert (await (await session.submit("[[tokens 20]]", owner="test")).outcome).status == "complete"
            head = kernel.events.head(session.id)
            assert base is not None and head is not None and head > base
            await eventually(lambda: waiting, what="a log write waiting for the disk")
            detaching = asyncio.Event()
            real_detach = kernel.events.detach

            async def spy(closed: Any) -> None:
                detaching.set()
                await real_detach(closed)  # runs up to its first wait in this same step

            monkeypatch.setattr(kernel.events, "detach", spy)
            closing = asyncio.create_task(session.close())
            await asyncio.wait_for(detaching.wait(), scaled(5))
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing
            # The caller went away; the log is still closing (or stopped), never "all stored".
            assert kernel.events.stored(session.id) == base
            with pytest.raises(EventLogStopped):
                await asyncio.wait_for(kernel.events.durable(session.id, head), scaled(5))
            assert kernel.events.stored(session.id) == base
            page = await kernel.events.read(session.id, after=0, limit=10_000)
            assert max(numbers(page.items)) <= await stored_end(storage, session.id)
        finally:
            disk.set()


async def test_a_log_that_gives_up_on_failing_storage_reads_only_what_it_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_core.event_log import writer

    monkeypatch.setattr(writer, "MAX_PENDING", 30)
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        storage: Any = kernel.storage
        session = await kernel.open_session("gives-up", source="embed", owner="test", cwd=tmp_path)
        assert (await (await session.submit("first", owner="test")).outcome).status == "complete"
        await kernel.events.flush()
        base = kernel.events.stored(session.id)
        real_write = storage.write_event_chunks
        calls: list[int] = []
        gate = asyncio.Event()
        failed: list[int] = []

        async def away(writes: Any) -> Any:
            # The first write fails at once (the log retries); the retry hangs, then fails too.
            calls.append(len(writes))
            if len(calls) > 1:
                await gate.wait()
            failed.append(len(calls))
            raise OSError("disk away")

        storage.write_event_chunks = away
        try:
            turn = await session.submit("two [[tokens 5]]", owner="test")
            assert (await turn.outcome).status == "complete"
            await eventually(lambda: len(calls) >= 2, what="the retry in flight")
            # Past MAX_PENDING queued events while the retry is in flight: the log gives up.
            paced = await session.submit("three [[tokens 60]] [[delay 1]]", owner="test")
            assert (await paced.outcome).status == "complete"
            head = kernel.events.head(session.id)
            assert base is not None and head is not None and head > base
            gate.set()
            await eventually(lambda: len(failed) >= 2, what="the retry to fail")
            await asyncio.sleep(0)
            page = await kernel.events.read(session.id, after=0, limit=10_000)
            assert max(numbers(page.items)) == base, (numbers(page.items)[-5:], base, head)
            assert page.durable == base and not page.more
            assert kernel.events.stored(session.id) == base
            with pytest.raises(EventLogStopped):
                await asyncio.wait_for(kernel.events.durable(session.id, head), scaled(5))
            follower = kernel.events.follow(session.id, after=0)
            seen: list[int] = []
            with pytest.raises(EventLogStopped):
                async for item in follower:
                    if not isinstance(item, LogGap):
                        seen.append(item.seq)
            assert seen and max(seen) == base
        finally:
            gate.set()
            storage.write_event_chunks = real_write
            await session.close()
