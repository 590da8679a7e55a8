"""A run's owner that stalls (``kill -STOP``, as a GC pause, a frozen VM or an overloaded host
would) (issue 29): within the grace period nothing ends; past it, another instance ends the run
once (``owner_lost``) and the owner, when it resumes, is fenced: it stops the run, releases its
session, shows no seq with another meaning and commits nothing as completed."""

from __future__ import annotations

import asyncio
import signal
import time

from tests.api.api_helpers import call
from tests.redis.fault_world import (
    GRACE,
    HEARTBEAT,
    Tap,
    World,
    create_run,
    one_ending,
    transcript,
)
from tests.redis.test_redis_instances import GUARDED, wait_status
from tests.timing import eventually, scaled

SHORT_STALL = 2.5  # more than three heartbeats (0.5 s), well within the grace period
assert 3 * HEARTBEAT < SHORT_STALL < GRACE - 2 * HEARTBEAT


async def test_an_owner_stalled_past_the_grace_period_is_fenced_and_its_run_ends_once(world: World) -> None:
    a, b = world.instances(2)
    run_id = await create_run(a, "[[tokens 40]] [[delay 100]] go", "stall-long")
    on_a, on_b = Tap(a, run_id), Tap(b, run_id)  # the owner's own reader, and another instance's
    await eventually(lambda: on_a.count("message.delta") >= 3 and on_b.count("message.delta") >= 1)
    a.proc.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        await eventually(
            lambda: on_b.end is not None, timeout=GRACE + 15, interval=0.05, what="b ends the run"
        )
        took = time.monotonic() - stopped
    finally:
        a.proc.send_signal(signal.SIGCONT)
    end = await one_ending([a, b], run_id, world.dsn, taps=(on_a, on_b))
    assert (end["event"], end["error_code"]) == ("run.failed", "owner_lost")
    # Not before the owner had been silent for the grace period (its last heartbeat came at most
    # one period before the stop).
    assert took >= GRACE - HEARTBEAT - 0.2, took
    log = "".join(a.log)
    assert "was ended by another instance" in log, log
    # The owner stopped the turn: its reply is kept as cut off, never as a completed one.
    rows = await transcript(world.dsn, "stall-long")
    assert [r[0] for r in rows][:1] == ["user"], rows
    assert all(meta.get("cut_off") for role, text, meta in rows if role == "assistant" and text), rows
    # …and released the session: the conversation goes on at once on the other instance.
    follow = await create_run(b, "next please", "stall-long")
    assert (await wait_status(b, follow, "completed"))["output"] == "You said: next please"


async def test_a_run_waiting_for_approval_when_its_owner_was_taken_for_dead_lets_its_session_go(
    world: World,
) -> None:
    a, b = world.instances(2)
    run_id = await create_run(a, GUARDED, "stall-approval")
    await wait_status(b, run_id, "waiting_for_approval")
    a.proc.send_signal(signal.SIGSTOP)
    try:
        failed = await wait_status(b, run_id, "failed")
    finally:
        a.proc.send_signal(signal.SIGCONT)
    assert failed["error_code"] == "owner_lost"
    # Nothing of the run is written while it waits: the owner learns it from its heartbeat, stops
    # the run and lets the session go, long before the approval would time out (300 s).
    resumed = time.monotonic()

    async def next_turn() -> str | None:
        reply = await call(b, "POST", "/v1/runs", {"input": "carry on", "session_id": "stall-approval"})
        if reply.status == 409:
            return None  # the owner still holds the session
        assert reply.status == 202, reply.text
        return str(reply.json["run_id"])

    follow = await eventually(next_turn, timeout=20, interval=0.2, what="the session released")
    assert time.monotonic() - resumed < scaled(20)
    assert (await wait_status(b, follow, "completed"))["status"] == "completed"
    end = await one_ending([a, b], run_id, world.dsn)
    assert end["error_code"] == "owner_lost"
    rows = await transcript(world.dsn, "stall-approval")
    replies = [(text, meta) for role, text, meta in rows if role == "assistant" and text]
    assert replies == [("You said: carry on", {})], rows  # the lost turn left no completed reply


async def test_an_owner_stalled_within_the_grace_period_keeps_its_run(world: World) -> None:
    a, b = world.instances(2)
    run_id = await create_run(a, "[[tokens 30]] [[delay 100]] go", "stall-short")
    on_b = Tap(b, run_id)
    await eventually(lambda: on_b.count("message.delta") >= 2)
    a.proc.send_signal(signal.SIGSTOP)
    try:
        # Longer than three heartbeats: the run is asked about on b all along, and stays running.
        until = time.monotonic() + SHORT_STALL
        while time.monotonic() < until:
            status = (await call(b, "GET", f"/v1/runs/{run_id}")).json
            assert status["status"] == "running", status
            await asyncio.sleep(0.2)
    finally:
        a.proc.send_signal(signal.SIGCONT)
    end = await one_ending([a, b], run_id, world.dsn, taps=(on_b,))
    assert end["event"] == "run.completed" and end["output"].count(" ") >= 20, end


async def test_a_reply_finished_as_the_owner_resumes_is_not_committed_as_completed(world: World) -> None:
    a, b = world.instances(2)
    # Stopped during the last token's delay: on resuming, the turn finishes its reply at once,
    # racing the owner's discovery that its run was ended meanwhile.
    run_id = await create_run(a, "[[tokens 2]] [[delay 600]] go", "stall-finish")
    on_b = Tap(b, run_id)
    await eventually(lambda: on_b.count("message.delta") >= 1)
    a.proc.send_signal(signal.SIGSTOP)
    try:
        await eventually(
            lambda: on_b.end is not None, timeout=GRACE + 15, interval=0.05, what="b ends the run"
        )
    finally:
        a.proc.send_signal(signal.SIGCONT)
    end = await one_ending([a, b], run_id, world.dsn, taps=(on_b,))
    assert end["error_code"] == "owner_lost"
    rows = await transcript(world.dsn, "stall-finish")
    replies = [(text, meta) for role, text, meta in rows if role == "assistant" and text]
    assert replies and all(meta.get("cut_off") == "interrupted" for _, meta in replies), rows
