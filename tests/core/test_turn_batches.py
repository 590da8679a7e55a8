"""Reading a turn's events in batches (``Turn.next_events``), as the HTTP streams do."""

from __future__ import annotations

import time
from pathlib import Path

from hermes_core import (
    AnyEvent,
    Kernel,
    ReasoningDelta,
    SegmentStarted,
    TextDelta,
    TitleChanged,
    TurnCompleted,
    TurnStarted,
    UsageUpdated,
)
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


async def test_quiet_events_wait_for_the_next_event_of_another_type(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("go [[reason r0 r1 r2 r3]] [[tokens 2]] [[delay 100]]", owner="me")
    quiet = frozenset({TurnStarted, ReasoningDelta, TitleChanged, SegmentStarted, UsageUpdated})
    turn.quiet_events(quiet)
    batches: list[list[AnyEvent]] = []
    timeouts = 0
    while True:
        batch = await turn.next_events(0.03)
        if batch is None:
            timeouts += 1  # four reasoning deltas, 100 ms apart, wake nobody
            continue
        assert batch, "the turn ended without TurnCompleted"
        batches.append(batch)
        if isinstance(batch[-1], TurnCompleted):
            break
    assert timeouts >= 5
    # Every read was ended by an event of another type, and the quiet ones came with it, in order.
    assert all(any(type(e) not in quiet for e in batch) for batch in batches)
    seen = [e for batch in batches for e in batch]
    assert isinstance(seen[0], TurnStarted)
    assert [e.text for e in seen if isinstance(e, ReasoningDelta)] == ["r0", " r1", " r2", " r3"]
    first_text = next(i for i, e in enumerate(seen) if isinstance(e, TextDelta))
    assert all(not isinstance(e, ReasoningDelta) for e in seen[first_text:])
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["t0", " t1"]


async def test_a_wait_without_quiet_events_still_wakes_for_each(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("go [[reason r0 r1 r2]] [[tokens 1]] [[delay 100]]", owner="me")
    reasoning_alone = 0
    while True:
        batch = await turn.next_events(5)
        assert batch
        if all(isinstance(e, (ReasoningDelta, TurnStarted, TitleChanged, SegmentStarted)) for e in batch):
            reasoning_alone += 1
        if isinstance(batch[-1], TurnCompleted):
            break
    assert reasoning_alone >= 2
