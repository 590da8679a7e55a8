"""The kernel's event log around live sessions (docs/reference/core.md#the-event-log): following a
live session, waiting for durability, what is never written, turning it off, a backend without
it, a second writer, and storage that fails for a while."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    ChunkWrite,
    Event,
    EventChunk,
    LogGap,
    SessionProblem,
    StorageSpec,
    StorageUnsupported,
    TurnCompleted,
    hookimpl,
)
from hermes_core.event_log.codec import ChunkHeader, encode_events, make_chunk, split_chunk
from hermes_core.memory_storage import MemoryStorage
from hermes_core.testing import make_kernel
from tests.timing import eventually, scaled

MOCK = {"model": "mock:echo"}


class Problems:
    """An observer plugin keeping every ``SessionProblem``."""

    hermes_plugin_name = "problems"

    def __init__(self) -> None:
        self.seen: list[SessionProblem] = []

    @hookimpl
    def hermes_on_event(self, session: Any, event: Event) -> None:
        if isinstance(event, SessionProblem):
            self.seen.append(event)


def kernel_on(storage: Any, *plugins: Any, **settings: Any) -> Any:
    class Backend:
        hermes_plugin_name = "test-backend"

        @hookimpl
        def hermes_storage_backends(self) -> StorageSpec:
            return StorageSpec(name="test", factory=lambda **_: storage, kind="server")

    return make_kernel(
        Backend(),
        *plugins,
        entry_points=["mock"],
        settings={**MOCK, "storage": {"backend": "test"}, **settings},
    )


async def test_follow_replays_then_continues_live_without_gap_or_repeat(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock"], settings=MOCK)
    async with kernel.running():
        session = await kernel.open_session("followed", source="embed", owner="me", cwd=tmp_path)
        await (await session.submit("first [[tokens 5]]", owner="me")).outcome
        seen: list[Event | LogGap] = []

        async def follow() -> None:
            async for item in kernel.events.follow(session.id, after=3):
                seen.append(item)
                if isinstance(item, TurnCompleted) and item.text.startswith("t0 t1 t2 t3 t4 t5"):
                    return

        import asyncio

        reader = asyncio.ensure_future(follow())
        await (await session.submit("second [[tokens 8]]", owner="me")).outcome
        await asyncio.wait_for(reader, 10)
    numbers = [item.seq for item in seen if not isinstance(item, LogGap)]
    assert numbers == list(range(4, 4 + len(numbers))), numbers
    assert sum(isinstance(item, TurnCompleted) for item in seen) == 2


async def test_a_replayed_event_has_exactly_its_live_timestamp(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock"], settings=MOCK)
    async with kernel.running():
        session = await kernel.open_session("stamped", source="embed", owner="me", cwd=tmp_path)
        live: list[Event] = []
        turn = await session.submit("go [[tokens 60]] [[delay 3]]", owner="me")
        async for event in turn.events():
            live.append(event)
        await kernel.events.flush()
        page = await kernel.events.read(session.id, after=0)
    replayed = {item.seq: item for item in page.items if not isinstance(item, LogGap)}
    assert len(live) > 60
    for event in live:
        # Transports number and stamp replayed events as they did live (API run events, say).
        assert replayed[event.seq].ts == event.ts, (event, replayed[event.seq])
        assert event.ts == round(event.ts, 3)


async def test_durable_waits_until_the_event_is_stored(tmp_path: Path) -> None:
    storage = MemoryStorage()
    kernel = kernel_on(storage)
    async with kernel.running():
        session = await kernel.open_session("durable", source="embed", owner="me", cwd=tmp_path)
        turn = await session.submit("hello", owner="me")
        events = [e async for e in turn.events()]
        await kernel.events.durable(session.id, events[-1].seq)
        stored = await storage.read_event_chunks(session.id, after=0, limit=100)
        assert stored and stored[-1].last_seq >= events[-1].seq
        assert kernel.events.head(session.id) >= events[-1].seq
        assert kernel.events.head("not-live") is None


async def test_a_turn_is_one_chunk_and_a_closed_log_is_sealed(tmp_path: Path) -> None:
    storage = MemoryStorage()
    kernel = kernel_on(storage)
    async with kernel.running():
        session = await kernel.open_session("chunks", source="embed", owner="me", cwd=tmp_path)
        for n in range(3):
            await (await session.submit(f"turn {n} [[tokens 20]]", owner="me")).outcome
        await session.close()
    chunks = await storage.read_event_chunks("chunks", after=0, limit=100)
    assert len(chunks) <= 4, [(c.first_seq, c.last_seq) for c in chunks]
    assert split_chunk(chunks[-1].data)[0].sealed
    assert not any(split_chunk(c.data)[0].sealed for c in chunks[:-1])


async def test_a_session_never_stored_writes_no_log(tmp_path: Path) -> None:
    storage = MemoryStorage()
    kernel = kernel_on(storage)
    async with kernel.running():
        session = await kernel.open_session("unstored", source="embed", owner="me", cwd=tmp_path)
        await session.set_title("Only a title")
        await session.close()
        assert await storage.get_session("unstored") is None
    assert await storage.last_event_chunk("unstored") is None


async def test_turned_off_nothing_is_numbered_and_reads_say_why(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock"], settings={**MOCK, "event_log": {"enabled": False}})
    async with kernel.running():
        assert not kernel.events.enabled
        assert "event_log.enabled = false" in (kernel.events.off_reason or "")
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        events = [e async for e in (await session.submit("hi", owner="me")).events()]
        assert {e.seq for e in events} == {0}
        page = await kernel.events.read(session.id, after=0)  # the backend keeps logs: an empty read
        assert page.items == [] and page.head == 0


class SessionsOnly:
    """A third-party backend written before records and the event log: only the old protocol."""

    def __init__(self) -> None:
        self._inner = MemoryStorage()

    def __getattr__(self, name: str) -> Any:
        if name.endswith(("_record", "_records")) or "event" in name:
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_a_backend_without_the_new_parts_gets_clear_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kernel = kernel_on(SessionsOnly())
    with caplog.at_level(logging.WARNING, logger="hermes.event_log"):
        async with kernel.running():
            assert not kernel.events.enabled and not kernel.records.available
            assert "write_event_chunks" in (kernel.events.off_reason or "")
            session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
            outcome = await (await session.submit("still works", owner="me")).outcome
            assert outcome.status == "complete"
            with pytest.raises(StorageUnsupported, match="write_event_chunks"):
                await kernel.events.read(session.id)
            with pytest.raises(StorageUnsupported, match="get_record"):
                await kernel.records.space("plugin.things").get("k")
    assert any(
        "events are not logged" in r.getMessage() and "'test'" in r.getMessage() for r in caplog.records
    )


async def test_a_second_writer_stops_this_log_and_says_so(tmp_path: Path) -> None:
    storage = MemoryStorage()
    kernel = kernel_on(storage)
    async with kernel.running():
        session = await kernel.open_session("contested", source="embed", owner="me", cwd=tmp_path)
        await (await session.submit("one", owner="me")).outcome
        await kernel.events.flush()
        problems = session.subscribe()
        end = (await storage.last_event_chunk("contested")).last_seq  # type: ignore[union-attr]
        intruder = make_chunk(end + 1, end + 1, ChunkHeader(end + 10), encode_events([]))
        assert await storage.write_event_chunks([ChunkWrite("contested", intruder, end)]) == [True]
        await (await session.submit("two", owner="me")).outcome
        problem = None
        async for event in problems:
            if isinstance(event, SessionProblem):
                problem = event
                break
        problems.close()
    assert problem is not None and problem.code == "storage" and "another process" in problem.message
    assert (await storage.last_event_chunk("contested")).last_seq == end + 1  # type: ignore[union-attr]


class Flaky(MemoryStorage):
    """Memory storage whose event-log writes fail a few times first."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def write_event_chunks(self, writes: Any) -> list[bool]:
        if self.failures:
            self.failures -= 1
            raise OSError("disk on fire")
        return await super().write_event_chunks(writes)


async def test_failed_writes_are_retried_and_reported_once(tmp_path: Path) -> None:
    storage = Flaky(failures=2)
    problems = Problems()
    kernel = kernel_on(storage, problems)
    async with kernel.running():
        session = await kernel.open_session("flaky", source="embed", owner="me", cwd=tmp_path)
        events = [e async for e in (await session.submit("hello", owner="me")).events()]
        await kernel.events.durable(session.id, events[-1].seq)
    assert storage.failures == 0
    assert [p.message for p in problems.seen] == [
        "writing this session's event log failed (retrying): disk on fire"
    ]
    stored = await storage.read_event_chunks("flaky", after=0, limit=50)
    assert stored[0].first_seq == 1 and stored[-1].last_seq >= events[-1].seq


async def test_an_unreadable_chunk_is_a_gap_not_a_crash(tmp_path: Path) -> None:
    storage = MemoryStorage()
    kernel = kernel_on(storage)
    async with kernel.running():
        session = await kernel.open_session("odd", source="embed", owner="me", cwd=tmp_path)
        await (await session.submit("one", owner="me")).outcome
        await session.close()
        end = (await storage.last_event_chunk("odd")).last_seq  # type: ignore[union-attr]
        # A chunk some newer version wrote, in a format this one does not know.
        future = EventChunk(end + 1, end + 3, b"\x07something newer")
        assert await storage.write_event_chunks([ChunkWrite("odd", future, end)]) == [True]
        again = await kernel.open_session("odd", source="embed", owner="me")
        events = [e async for e in (await again.submit("two", owner="me")).events()]
        await kernel.events.durable("odd", events[-1].seq)  # a read gives stored events only
        page = await kernel.events.read("odd", after=end)
        await again.close()
    gaps = [item for item in page.items if isinstance(item, LogGap)]
    assert [(g.reason, g.first_seq) for g in gaps] == [("unreadable", end + 1), ("lost", end + 4)]
    assert events[0].seq == end + 3 + 65_536 + 1


async def test_closing_does_not_wait_for_storage_that_is_away(tmp_path: Path) -> None:
    storage = Flaky(failures=10**9)
    kernel = kernel_on(storage)
    async with kernel.running():
        session = await kernel.open_session("away", source="embed", owner="me", cwd=tmp_path)
        await (await session.submit("hello", owner="me")).outcome
        await eventually(lambda: storage.failures < 10**9)  # a write was tried and failed
        started = time.monotonic()
        await session.close()
        took = time.monotonic() - started
    assert took < scaled(1.0), took
    assert await storage.last_event_chunk("away") is None


async def test_a_log_whose_writes_keep_failing_stops_instead_of_growing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_core.event_log import writer

    monkeypatch.setattr(writer, "MAX_PENDING", 30)
    storage = Flaky(failures=10**9)
    problems = Problems()
    kernel = kernel_on(storage, problems)
    async with kernel.running():
        session = await kernel.open_session("overflow", source="embed", owner="me", cwd=tmp_path)
        await (await session.submit("one", owner="me")).outcome
        await eventually(lambda: storage.failures < 10**9)
        paced = await session.submit("two [[tokens 60]] [[delay 1]]", owner="me")  # 60 events, not merged
        events = [e async for e in paced.events()]
        head = kernel.events.head(session.id)
    assert any("stopped" in p.message for p in problems.seen), [p.message for p in problems.seen]
    assert events[-1].seq == 0 and head is not None and head < events[0].seq + 40


class Recording(MemoryStorage):
    """Memory storage noting the first number of each chunk of each ``write_event_chunks`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, int]] = []
        self.compacted: set[str] = set()

    async def write_event_chunks(self, writes: Any) -> list[bool]:
        # A compaction's rewrite (from the start of its tail) shows as number 0.
        self.calls.append({w.session_id: 0 if w.replace_from else w.chunk.first_seq for w in writes})
        self.compacted.update(w.session_id for w in writes if w.replace_from is not None)
        return await super().write_event_chunks(writes)


async def _stored_sessions(
    kernel: Any, storage: Recording, tmp_path: Path, count: int, *, compacted: bool
) -> tuple[list[Any], dict[str, int]]:
    """Open ``count`` sessions, each with a stored turn and its events written (``compacted``:
    and rewritten by the compaction after the turn); forget those writes."""
    sessions = [
        await kernel.open_session(f"tick{i}", source="embed", owner="me", cwd=tmp_path) for i in range(count)
    ]
    for session in sessions:
        await (await session.submit("hello", owner="me")).outcome
    await kernel.events.flush()
    if compacted:
        await eventually(lambda: storage.compacted >= {session.id for session in sessions})
    storage.calls.clear()
    return sessions, {session.id: kernel.events.head(session.id) or 0 for session in sessions}


def _streamed(storage: Recording, ends: dict[str, int]) -> list[dict[str, int]]:
    """The calls writing only events after ``ends`` (not compactions rewriting a log's tail)."""
    return [call for call in storage.calls if all(first > ends[name] for name, first in call.items())]


async def test_a_log_due_for_compaction_still_writes_a_new_stream_every_interval(tmp_path: Path) -> None:
    # A new turn in a session whose last turn waits for its compaction: what it streams is
    # written every FLUSH_S, not held until the compaction is due.
    storage = Recording()
    kernel = kernel_on(storage)
    async with kernel.running():
        (session,), ends = await _stored_sessions(kernel, storage, tmp_path, 1, compacted=False)
        await (await session.submit("go [[tokens 80]] [[delay 5]]", owner="me")).outcome  # >= 400 ms
    assert len(_streamed(storage, ends)) >= 4, storage.calls


async def _staggered_streams(kernel: Any, sessions: list[Any]) -> None:
    """Stream a ~400 ms turn in every session, each starting a few deltas after the one before."""
    turns = []
    for session in sessions:
        turn = await session.submit("go [[tokens 80]] [[delay 5]]", owner="me")
        turns.append(turn)
        deltas = 0
        async for event in turn.events():
            deltas += type(event).__name__ == "TextDelta"
            if deltas == 3:
                break
    for turn in turns:
        await turn.outcome


async def test_streaming_sessions_share_one_write_per_interval(tmp_path: Path) -> None:
    # Sessions that stream at once have their provisional chunks written together, one storage
    # call per FLUSH_S for all of them however their streams are staggered (not one call per
    # session and interval: the writer's passes grew with the number of streams).
    storage = Recording()
    kernel = kernel_on(storage)
    async with kernel.running():
        sessions, ends = await _stored_sessions(kernel, storage, tmp_path, 4, compacted=True)
        await _staggered_streams(kernel, sessions)
    streamed = _streamed(storage, ends)
    assert len(streamed) >= 4, storage.calls
    assert sum(len(call) for call in streamed) >= 2 * len(streamed), storage.calls


async def test_the_tick_stretches_when_many_sessions_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past CHUNKS_PER_TICK chunks in one tick, the tick grows (here: 4 streams, 1 per tick of
    # 50 ms, so 200 ms): each chunk holds more of its stream.
    from hermes_core.event_log import writer_task

    monkeypatch.setattr(writer_task, "CHUNKS_PER_TICK", 1)
    storage = Recording()
    kernel = kernel_on(storage)
    async with kernel.running():
        sessions, ends = await _stored_sessions(kernel, storage, tmp_path, 4, compacted=True)
        started = time.monotonic()
        await _staggered_streams(kernel, sessions)
        took = time.monotonic() - started
    streamed = _streamed(storage, ends)
    assert len(streamed) >= 2, storage.calls
    assert len(streamed) <= took / (2 * writer_task.FLUSH_S), (took, storage.calls)


async def test_a_pass_over_many_logs_lets_the_loop_run_between_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Building every streaming session's chunk in one step stalled every stream (46 ms a pass at
    # 1,000 streams): a pass gives the loop back every SLICE_S, both while it builds the chunks
    # and while it settles their outcomes. Here every log is its own slice.
    from hermes_core.event_log import writer, writer_task

    monkeypatch.setattr(writer_task, "SLICE_S", 0.0)
    storage = Recording()
    kernel = kernel_on(storage)
    marks: list[str] = []
    build, done = writer.SessionLog.build, writer.SessionLog.done

    def noted_build(self: Any, now: float) -> Any:
        built = build(self, now)
        if built:
            marks.append("build")
        return built

    def noted_done(self: Any, *args: Any) -> None:
        marks.append("done")
        done(self, *args)

    async def ticker() -> None:
        while True:
            marks.append("tick")
            await asyncio.sleep(0)

    async with kernel.running():
        sessions, _ = await _stored_sessions(kernel, storage, tmp_path, 5, compacted=True)
        monkeypatch.setattr(writer.SessionLog, "build", noted_build)
        monkeypatch.setattr(writer.SessionLog, "done", noted_done)
        ticking = asyncio.create_task(ticker())
        for session in sessions:
            session.mark_changed("title")  # an event in every log, queued in one step
        await kernel.events.flush()
        ticking.cancel()
    for kind in ("build", "done"):
        at = [i for i, mark in enumerate(marks) if mark == kind][:5]  # the first pass's
        assert len(at) == 5, marks
        between = marks[at[0] : at[-1]]
        assert between.count("tick") >= 4, marks  # the loop ran between every two
