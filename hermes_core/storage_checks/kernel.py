"""Conformance checks of the kernel's event log running on the backend: numbering, a restart, a
crash that cut a turn off, retention and cursors (docs/reference/core.md#the-event-log)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes_core.errors import CursorError
from hermes_core.event_log.codec import ChunkHeader, encode_events, make_chunk
from hermes_core.event_log.reader import LogGap
from hermes_core.event_log.store import ChunkWrite
from hermes_core.events import (
    AnyEvent,
    Event,
    ReasoningDelta,
    SegmentStarted,
    TextDelta,
    TurnCompleted,
    TurnStarted,
)
from hermes_core.hookspecs import hookimpl
from hermes_core.kernel import Kernel
from hermes_core.providers import ChatRequest, Chunk, FinishChunk, TextChunk
from hermes_core.records import StorageSpec
from hermes_core.storage_checks import StorageTarget, World, check, ensure, until

WORDS = ("Hello", " there", ",", " how", " are", " you", "?")


class _UnderTest:
    """A plugin serving the target's storages as the backend ``under-test``."""

    hermes_plugin_name = "storage-under-test"

    def __init__(self, target: StorageTarget) -> None:
        self._target = target

    @hookimpl
    def hermes_storage_backends(self) -> StorageSpec:
        return StorageSpec(name="under-test", factory=lambda **_: self._target.make(), kind="server")


def _answer(request: ChatRequest) -> Iterable[Chunk]:
    return [*(TextChunk(w) for w in WORDS), FinishChunk("stop")]


def _kernel(target: StorageTarget, **event_log: Any) -> Kernel:
    from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel

    settings: dict[str, Any] = {"model": "fake:model", "storage": {"backend": "under-test"}}
    if event_log:
        settings["event_log"] = event_log
    return make_kernel(_UnderTest(target), FakeProviderPlugin(FakeProvider(_answer)), settings=settings)


async def _turns(kernel: Kernel, session_id: str, count: int) -> list[AnyEvent]:
    seen: list[AnyEvent] = []
    session = await kernel.open_session(
        session_id, source="embed", owner="check", cwd=Path(tempfile.gettempdir())
    )
    for n in range(count):
        turn = await session.submit(f"question {n}", owner="check")
        seen += [e async for e in turn.events()]
    await session.close()
    return seen


async def _all(kernel: Kernel, session_id: str, after: int = 0) -> list[AnyEvent | LogGap]:
    """Every item of the log after ``after``, page by page (the session need not be closed)."""
    items: list[AnyEvent | LogGap] = []
    while True:
        page = await kernel.events.read(session_id, after=after)
        items += page.items
        after = page.last_seq
        if not page.more:
            return items


def _same(live: Event, logged: Event | LogGap) -> bool:
    if isinstance(logged, LogGap) or type(live) is not type(logged) or live.seq != logged.seq:
        return False
    if isinstance(live, TextDelta | ReasoningDelta) and isinstance(logged, TextDelta | ReasoningDelta):
        return live.text == logged.text and abs(live.ts - logged.ts) < 0.002
    return live == logged


@check("kernel")
async def events_are_numbered_and_logged(target: StorageTarget) -> None:
    kernel = _kernel(target)
    async with kernel.running():
        live = await _turns(kernel, "numbered", 2)
        seqs = [e.seq for e in live]
        ensure(
            all(s > 0 for s in seqs) and seqs == sorted(seqs), f"live events carry growing numbers: {seqs}"
        )
        logged = await _all(kernel, "numbered")
    numbers = [e.seq for e in logged if not isinstance(e, LogGap)]
    ensure(numbers == list(range(1, len(numbers) + 1)), f"the log numbers from 1 without holes: {numbers}")
    by_seq = {e.seq: e for e in logged if not isinstance(e, LogGap)}
    wrong = [e for e in live if not _same(e, by_seq.get(e.seq, LogGap(0, 0, "lost")))]
    ensure(not wrong, f"every live event reads back the same: first difference {wrong[:1]}")


@check("kernel")
async def numbering_continues_after_a_restart(target: StorageTarget) -> None:
    async with _kernel(target).running() as first:
        before = await _turns(first, "restarted", 1)
    async with _kernel(target).running() as second:
        after = await _turns(second, "restarted", 1)
        logged = await _all(second, "restarted")
        ensure(after[0].seq > before[-1].seq, "a reopened log continues above the numbers it had")
        resumed = await _all(second, "restarted", after=before[-1].seq)
    numbers = [e.seq for e in logged if not isinstance(e, LogGap)]
    ensure(
        numbers == list(range(1, len(numbers) + 1)), f"no gap and no repeat across a clean restart: {numbers}"
    )
    ended = [e for e in logged if isinstance(e, TurnCompleted)]
    ensure([e.outcome.status for e in ended] == ["complete", "complete"], "both turns ended once each")
    ensure(
        resumed and not isinstance(resumed[0], LogGap) and resumed[0].seq == before[-1].seq + 1,
        "a cursor from before the restart continues with the next event",
    )


async def _crash(target: StorageTarget, sid: str, above: int) -> tuple[list[Any], int, str]:
    """Leave what a process killed mid-turn leaves (a chunk not sealed, its turn still running,
    noting a reservation ``above`` its last number), open the session again and run one more
    turn; return the log after the crash chunk's first event, that event's number and the
    next turn's status."""
    async with _kernel(target).running() as first:
        before = await _turns(first, sid, 1)
    ensure(before[-1].seq > 0, "the first turn was logged")
    turn_id = "turn_cut"
    crashed: list[AnyEvent] = [
        TurnStarted(
            session_id=sid,
            turn_id=turn_id,
            item_ids=("q1",),
            user_row_id=None,
            queued=False,
            model="m",
            model_source="x",
        ),
        SegmentStarted(session_id=sid, turn_id=turn_id, segment_id="seg"),
        TextDelta(session_id=sid, turn_id=turn_id, segment_id="seg", text="part"),
        TextDelta(session_id=sid, turn_id=turn_id, segment_id="seg", text="ial"),
    ]
    async with World(target) as world:
        storage: Any = await world.storage()
        last = await _end(storage, sid)
        first_seq, end = last + 1, last + len(crashed)
        header = ChunkHeader(reserve=end + above, open_turn=(turn_id, first_seq))
        chunk = make_chunk(first_seq, end, header, encode_events(crashed))
        written = await storage.write_event_chunks([ChunkWrite(sid, chunk, after=last)])
        ensure(written == [True], "the crashed chunk is written")
    async with _kernel(target).running() as second:
        session = await second.open_session(sid, source="embed", owner="check")
        await second.events.flush()
        tail = await _all(second, sid, after=end - 1)
        turn = await session.submit("again", owner="check")
        outcome = await turn.outcome
        await session.close()
    ensure(
        isinstance(tail[0], TextDelta) and tail[0].seq == end,
        f"the log keeps what the crash left: {tail[:1]}",
    )
    return tail, end, outcome.status


def _ends_interrupted(done: Any, end: int, at: int) -> None:
    ensure(isinstance(done, TurnCompleted), f"the cut-off turn gets its terminal event: {done}")
    assert isinstance(done, TurnCompleted)
    ensure(done.seq == at and done.turn_id == "turn_cut", f"numbered {at}, for that turn: {done.seq}")
    ensure(
        done.outcome.status == "interrupted" and done.outcome.reason == "interrupted_by_system", "interrupted"
    )
    ensure(
        done.text == "partial" and done.outcome.partial, f"with what the log holds of its text: {done.text!r}"
    )


@check("kernel")
async def a_cut_off_turn_ends_interrupted(target: StorageTarget) -> None:
    # The writer shows only stored events and notes its chunk's own end as the reservation: the
    # end comes right after the last stored event, with no gap.
    tail, end, status = await _crash(target, "crashed", 0)
    ensure(not any(isinstance(i, LogGap) for i in tail), f"no gap where nothing was shown: {tail}")
    _ends_interrupted(tail[1], end, end + 1)
    ensure(status == "complete", "the next turn works")


@check("kernel")
async def an_older_writers_reservation_is_a_lost_gap(target: StorageTarget) -> None:
    # A log left by a writer that noted numbers above its end (it may have shown them).
    tail, end, status = await _crash(target, "crashed_old", 100)
    gap = tail[1]
    ensure(
        isinstance(gap, LogGap)
        and gap.reason == "lost"
        and (gap.first_seq, gap.last_seq) == (end + 1, end + 100),
        f"the numbers the dead process may have shown are a lost gap: {gap}",
    )
    _ends_interrupted(tail[2], end, end + 101)
    ensure(status == "complete", "the next turn works")


async def _end(storage: Any, session_id: str) -> int:
    last = await storage.last_event_chunk(session_id)
    return int(last.last_seq) if last is not None else 0


@check("kernel")
async def retention_drops_the_oldest(target: StorageTarget) -> None:
    kernel = _kernel(target, max_events=100)
    async with kernel.running():
        await _turns(kernel, "retained", 12)
        storage: Any = kernel.storage

        async def trimmed() -> bool:
            index = await storage.event_log_index("retained")
            return bool(index) and sum(i.last_seq - i.first_seq + 1 for i in index) <= 100

        await until(trimmed, "the log to be trimmed to event_log.max_events")
        items = await _all(kernel, "retained")
    first = items[0]
    ensure(
        isinstance(first, LogGap) and first.reason == "retention" and first.first_seq == 1,
        f"a retention gap first: {first}",
    )
    assert isinstance(first, LogGap)
    ensure(
        not isinstance(items[1], LogGap) and items[1].seq == first.last_seq + 1, "then the oldest event kept"
    )


@check("kernel")
async def cursors_are_checked(target: StorageTarget) -> None:
    kernel = _kernel(target)
    async with kernel.running():
        live = await _turns(kernel, "cursors", 1)
        head = live[-1].seq
        problems = []
        for bad in ("abc", "1.5", "", -1, "-3", head + 1000, 2**70, True):
            try:
                await kernel.events.read("cursors", after=bad)
            except CursorError as exc:
                problems.append(exc.problem)
            else:
                problems.append("accepted")
        page = await kernel.events.read("cursors", after=str(head - 1))
    ensure(
        problems
        == [
            "not_a_number",
            "not_a_number",
            "not_a_number",
            "negative",
            "negative",
            "ahead",
            "ahead",
            "not_a_number",
        ],
        f"bad cursors are refused with a reason: {problems}",
    )
    ensure(
        page.items and not isinstance(page.items[0], LogGap) and page.items[0].seq == head, "a cursor as text"
    )
