"""Busy input, steer and interrupt (docs/reference/core.md#the-turn-loop)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    InvalidValue,
    Kernel,
    ReasoningDelta,
    SessionBusy,
    SteerDelivered,
    TextDelta,
    TurnCompleted,
)
from tests.core.conftest import collect
from tests.timing import eventually, scaled


async def _first(turn: Any, kind: type) -> Any:
    """Read the turn's events up to the first of ``kind`` (the turn is then known to be running)."""
    async for event in turn.events():
        if isinstance(event, kind):
            return event
    raise AssertionError(f"the turn ended without a {kind.__name__}")


async def _first_delta(turn: object) -> None:
    async for ev in turn.events():  # type: ignore[attr-defined]
        if isinstance(ev, TextDelta):
            return


async def test_busy_submit_queues_and_runs_in_order(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    first = await session.submit("[[delay 30]] one two three", owner="a")
    second = await session.submit("second", owner="b")
    third = await session.submit("third", owner="c")
    assert first.position == 0 and second.position == 1 and third.position == 2
    assert session.busy and session.info().queued == 2
    e1, e2, e3 = await asyncio.gather(collect(first), collect(second), collect(third))
    assert e1[-1].text == "You said: one two three"
    assert e2[-1].text == "You said: second" and e3[-1].text == "You said: third"
    assert e1[-1].turn_id != e2[-1].turn_id
    assert e2[0].queued is False or e2[0].queued is True  # field present
    assert not session.busy


async def test_merged_items_run_as_one_turn(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    first = await session.submit("[[delay 30]] busy now", owner="a")
    second = await session.submit("alpha", owner="a", merge=True)
    third = await session.submit("beta", owner="a", merge=True)
    await first.outcome
    e2 = await collect(second)
    assert e2[0].item_ids == (second.item_id, third.item_id)
    assert e2[-1].text == "You said: alpha\n\nbeta"
    assert await third.outcome == await second.outcome
    rows = await session.history()
    assert [r.content for r in rows if r.role == "user"] == ["[[delay 30]] busy now", "alpha\n\nbeta"]


async def test_queue_is_capped_at_one_mebibyte(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    running = await session.submit("[[delay 50]] a b c", owner="a")
    await session.submit("x" * (1 << 19), owner="a")
    with pytest.raises(SessionBusy) as err:
        await session.submit("y" * ((1 << 19) + 10), owner="a")
    assert err.value.reason == "queue_full"
    await session.interrupt(discard_queue=True)
    await running.outcome


async def test_cancel_queued_item(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    running = await session.submit("[[delay 30]] a b", owner="a")
    waiting = await session.submit("later", owner="a")
    assert session.cancel_queued(waiting.item_id) is True
    assert session.cancel_queued(waiting.item_id) is False
    outcome = await waiting.outcome
    assert (outcome.status, outcome.reason) == ("interrupted", "interrupted_by_user")
    assert await collect(waiting) == []
    await running.outcome


async def test_interrupt_while_streaming_is_fast_and_session_reusable(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("[[delay 200]] " + " ".join(f"w{i}" for i in range(50)), owner="me")
    events: list[object] = []

    async def reader() -> None:
        async for ev in turn.events():
            events.append(ev)

    task = asyncio.create_task(reader())
    await eventually(lambda: any(isinstance(e, TextDelta) for e in events))
    started = time.perf_counter()
    result = await session.interrupt(reason="user", discard_queue=False)
    outcome = await turn.outcome
    elapsed = time.perf_counter() - started
    await task
    assert result.was_running
    assert (outcome.status, outcome.reason, outcome.partial) == ("interrupted", "interrupted_by_user", True)
    assert isinstance(events[-1], TurnCompleted)
    assert elapsed < scaled(0.2)
    # the streamed part is kept in the transcript; the session takes new turns
    history = await session.history()
    assert history[-1].role == "assistant" and history[-1].content.startswith("You")
    again = await session.submit("again", owner="me")
    assert (await again.outcome).reason == "stop"


async def test_interrupt_with_discard_queue_drops_waiting_items(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    running = await session.submit("[[delay 100]] a b c d", owner="a")
    w1 = await session.submit("one", owner="b")
    w2 = await session.submit("two", owner="c")
    await _first(running, TextDelta)
    result = await session.interrupt(discard_queue=True)
    assert [d.text for d in result.discarded] == ["one", "two"]
    assert [d.owner for d in result.discarded] == ["b", "c"]
    for t in (running, w1, w2):
        assert (await t.outcome).status == "interrupted"
    assert not session.busy


async def test_interrupt_keeps_queue_running_without_discard(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    running = await session.submit("[[delay 100]] a b c d", owner="a")
    waiting = await session.submit("next", owner="b")
    await _first(running, TextDelta)
    await session.interrupt(discard_queue=False)
    assert (await running.outcome).status == "interrupted"
    assert (await waiting.outcome).reason == "stop"


async def test_interrupt_when_idle_reports_nothing_running(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    result = await session.interrupt()
    assert not result.was_running and result.discarded == ()


async def test_steer_is_delivered_after_the_next_tool_batch(kernel: Kernel, workspace: Path) -> None:
    (workspace / "a.txt").write_text("first line\nsecond\n")
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    assert session.steer("too early") == "idle"
    turn = await session.submit(
        '[[reason thinking about it slowly]] [[delay 40]] [[tool read_file {"path": "a.txt"}]]', owner="me"
    )
    await _first(turn, ReasoningDelta)
    assert session.steer("focus on tests") == "accepted"
    events = await collect(turn)
    delivered = [e for e in events if isinstance(e, SteerDelivered)]
    assert delivered and delivered[0].chars == len("focus on tests")
    done = events[-1]
    assert done.text.endswith(" / Steer: focus on tests")
    assert done.pending_steer is None
    tool_rows = [r for r in session.rows if r.role == "tool"]
    assert tool_rows[-1].content.endswith("\n\n[User guidance] focus on tests")


async def test_undelivered_steer_comes_back_as_pending(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("[[delay 40]] a b c d e", owner="me")
    await _first(turn, TextDelta)
    assert session.steer("one") == "accepted"
    assert session.steer("two") == "accepted"
    events = await collect(turn)
    assert events[-1].pending_steer == "one\n\ntwo"
    assert session.steer("late") == "idle"


async def test_withdrawn_steer_never_reaches_the_model(kernel: Kernel, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    assert session.withdraw_steer() == []  # nothing runs
    turn = await session.submit(
        '[[reason slowly now]] [[delay 40]] [[tool read_file {"path": "a.txt"}]]', owner="me"
    )
    await _first(turn, ReasoningDelta)
    assert session.steer("one") == "accepted"
    assert session.steer("two") == "accepted"
    assert session.withdraw_steer() == ["one", "two"]
    assert session.withdraw_steer() == []
    events = await collect(turn)
    assert not [e for e in events if isinstance(e, SteerDelivered)]
    assert events[-1].pending_steer is None and "Steer" not in events[-1].text
    assert not any("[User guidance]" in r.content for r in session.rows)


async def test_steer_validation(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    with pytest.raises(InvalidValue):
        session.steer("x" * 65537)
    with pytest.raises(InvalidValue):
        session.steer("  ")


async def test_tool_round_cap_ends_the_turn_as_an_error(tmp_path: Path, workspace: Path) -> None:
    from hermes_core.testing import make_kernel

    (workspace / "a.txt").write_text("x\n")
    kernel = make_kernel(entry_points=["mock", "tools"], settings={"agent": {"max_tool_rounds": 2}})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
        events = await collect(
            await session.submit('[[rounds 5]] [[tool read_file {"path": "a.txt"}]]', owner="me")
        )
        outcome = events[-1].outcome
        assert (outcome.status, outcome.reason, outcome.partial, outcome.cap) == (
            "error",
            "iteration_cap",
            True,
            (2, 2),
        )
        completed = [e for e in events if type(e).__name__ == "ToolCompleted"]
        assert len(completed) == 2
        # still usable
        assert (await (await session.submit("ok", owner="me")).outcome).reason == "stop"


async def test_close_interrupts_and_discards(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    running = await session.submit("[[delay 100]] a b c", owner="a")
    waiting = await session.submit("next", owner="a")
    await _first(running, TextDelta)
    await session.close()
    assert (await running.outcome).reason == "interrupted_by_system"
    assert (await waiting.outcome).reason == "interrupted_by_system"
    assert kernel.live_session(session.id) is None
