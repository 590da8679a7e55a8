"""Reading a turn's events in batches (``Turn.next_events``), as the HTTP streams do."""

from __future__ import annotations

import time
from pathlib import Path

from hermes_core import Kernel, TextDelta, TurnCompleted, TurnStarted
from tests.timing import scaled


async def test_next_events_batches_times_out_and_ends(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("go [[tokens 3]] [[delay 150]]", owner="me")
    seen = []
    timeouts = 0
    started = time.monotonic()
    while True:
        # A long wait first (it arms a 10 s deadline), then short ones, which must not inherit it.
        waited = any(isinstance(e, TextDelta) for e in seen)
        batch = await turn.next_events(0.05 if waited else 10)
        if batch is None:
            timeouts += 1  # the provider is silent for 150 ms between deltas
            continue
        assert batch, "the turn ended without TurnCompleted"
        seen.extend(batch)
        if isinstance(batch[-1], TurnCompleted):
            break
    assert time.monotonic() - started < scaled(5)
    assert timeouts >= 2
    assert isinstance(seen[0], TurnStarted)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["t0", " t1", " t2"]
    assert [type(e) for e in seen].count(TurnCompleted) == 1
    # Once the turn is over, reading again says so at once.
    assert await turn.next_events(10) == []


async def test_next_events_returns_everything_already_waiting(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("count [[tokens 40]]", owner="me")
    await turn.outcome
    batch = await turn.next_events(None)
    assert batch is not None and isinstance(batch[0], TurnStarted)
    assert isinstance(batch[-1], TurnCompleted)  # the whole turn in one read
    assert "".join(e.text for e in batch if isinstance(e, TextDelta)) == batch[-1].text


async def test_a_sink_takes_events_while_none_is_queued_and_order_is_kept(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("go [[tokens 4]] [[delay 30]]", owner="me")
    offered: list[object] = []
    taken: list[str] = []

    def sink(event: object) -> bool:
        offered.append(event)
        # Takes the deltas after the first; the first one stays queued (unread until below).
        if isinstance(event, TextDelta) and event.text != "t0":
            taken.append(event.text)
            return True
        return False

    turn.set_sink(sink)
    await turn.outcome
    seen = await turn.next_events(None)
    assert seen is not None and isinstance(seen[-1], TurnCompleted)
    # TurnStarted was refused and queued: nothing after it was offered, so nothing was taken,
    # and every event is still read in order.
    assert offered and isinstance(offered[0], TurnStarted) and len(offered) == 1
    assert taken == []
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["t0", " t1", " t2", " t3"]


async def test_a_sink_takes_deltas_once_the_reader_caught_up(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("go [[tokens 4]] [[delay 100]]", owner="me")
    taken: list[str] = []
    numbers: list[int] = []

    def sink(event: object) -> bool:
        if isinstance(event, TextDelta) and event.text != "t0":
            numbers.append(event.seq)
            taken.append(event.text)
            return True
        return False

    turn.set_sink(sink)
    seen: list[object] = []
    while True:
        batch = await turn.next_events(scaled(10))
        assert batch
        seen.extend(batch)
        if isinstance(batch[-1], TurnCompleted):
            break
    turn.set_sink(None)
    texts = [e.text for e in seen if isinstance(e, TextDelta)]
    # Each delta either was taken by the sink or read, never both, never lost; the first one
    # was refused, and the reader read it.
    assert texts[0] == "t0" and taken
    assert sorted(texts[1:] + taken) == sorted([" t1", " t2", " t3"])
    assert all(n > 0 for n in numbers)  # offered after the event log numbered them


async def test_a_failing_sink_leaves_the_event_queued(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("go [[tokens 2]]", owner="me")

    def sink(event: object) -> bool:
        raise RuntimeError("broken sink")

    turn.set_sink(sink)
    await turn.outcome
    seen = await turn.next_events(None)
    assert seen is not None and isinstance(seen[-1], TurnCompleted)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["t0", " t1"]
