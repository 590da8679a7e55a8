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
