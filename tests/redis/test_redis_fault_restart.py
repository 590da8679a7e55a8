"""Redis restarting empty (no persistence) around runs (issue 29): a run created as it comes back
is never taken for lost; one streaming across the restart ends once; one settled before it is
still replayed with a ``stream.gap`` before its stored end, never a silent jump."""

from __future__ import annotations

import signal
import time
from typing import Any

from tests.api.api_helpers import call
from tests.redis.fault_world import GRACE, Tap, World, create_run, one_ending, read_all, transcript
from tests.redis.stream_checks import check_stream
from tests.redis.test_redis_instances import wait_status
from tests.timing import eventually


async def healthy(*servers: Any) -> None:
    async def all_up() -> bool:
        for server in servers:
            if (await call(server, "GET", "/health/detailed")).status != 200:
                return False
        return True

    await eventually(all_up, timeout=30, interval=0.1, what="every instance on the bus again")


async def test_runs_created_as_redis_comes_back_empty_are_never_taken_for_lost(world: World) -> None:
    # A heartbeat slower than the writer's retry (0.5 s), as by default: the run's record is back
    # before its owner's heartbeat.
    a, b = world.instances(2, heartbeat=1.0)
    run_ids = []
    seen: list[dict[str, Any]] = []
    for _ in range(2):
        await healthy(a, b)
        await world.restart_redis_empty()
        for _ in range(2):
            run_ids.append(await create_run(a, "[[tokens 20]] [[delay 50]] go"))
            # At once, on the other instance, again and again: the owner has not announced itself
            # again yet (its heartbeat comes once a second).
            for _ in range(8):
                reply = await call(b, "GET", f"/v1/runs/{run_ids[-1]}")
                if reply.status == 200:
                    seen.append(reply.json)
                else:
                    assert reply.status == 503, reply.text

    async def settled() -> bool:
        for run_id in run_ids:
            reply = await call(b, "GET", f"/v1/runs/{run_id}")
            if reply.status != 200:
                return False
            seen.append(reply.json)
            if reply.json["status"] in ("queued", "running"):
                return False
        return True

    await eventually(settled, timeout=60, interval=0.05, what="the runs to settle")
    assert not [s for s in seen if s["status"] == "failed"], [s for s in seen if s["status"] == "failed"]
    for run_id in run_ids:
        end = await one_ending([a, b], run_id, world.dsn)
        assert end["event"] == "run.completed", end


async def test_a_run_streaming_across_a_redis_restart_ends_once(world: World) -> None:
    a, b = world.instances(2)
    await healthy(a, b)
    run_id = await create_run(a, "[[tokens 80]] [[delay 40]] go")
    on_a, on_b = Tap(a, run_id), Tap(b, run_id)
    await eventually(lambda: on_b.count("message.delta") >= 3)
    await world.restart_redis_empty()
    end = await one_ending([a, b], run_id, world.dsn, taps=(on_a, on_b))
    assert end["event"] == "run.completed" and end["output"].count(" ") >= 70, end
    # The owner's own reader lost nothing.
    assert [f["data"]["event"] for f in on_a.frames].count("stream.gap") == 0


async def test_a_run_settled_before_redis_restarted_empty_is_replayed_from_the_event_log(
    world: World,
) -> None:
    a, b = world.instances(2)
    await healthy(a, b)
    run_id = await create_run(a, "[[tokens 12]] [[delay 5]] go")
    done = await wait_status(b, run_id, "completed")
    last = int(done["last_seq"])
    assert last >= 6, done
    await world.restart_redis_empty()
    await healthy(a, b)
    for server in (a, b):
        for cursor in (0, 3, last - 1):
            frames = await read_all(server, run_id, cursor)
            events = check_stream(frames, cursor)
            assert events[last]["event"] == "run.completed" and max(events) == last, frames
            # Nothing of the stream is left on the bus: the events come back from the session's
            # event log in the shared database, without a gap.
            assert "stream.gap" not in [f["data"]["event"] for f in frames], frames
            assert sorted(events) == list(range(cursor + 1, last + 1)), frames
    end = await one_ending([a, b], run_id, world.dsn)
    assert end["seq"] == last
    # The bus works as before for a run started after the restart.
    again = await create_run(b, "[[tokens 5]] after")
    assert (await one_ending([a, b], again, world.dsn))["event"] == "run.completed"


async def test_a_run_ended_for_a_stalled_owner_stays_ended_when_redis_restarts_before_it_resumes(
    world: World,
) -> None:
    # The reaper's end reached the stream (a reader saw it) but Redis forgot it before the owner
    # could learn it was fenced: the durable record must already hold it, so that the owner, when
    # it claims its runs again, stops this one instead of finishing it.
    a, b = world.instances(2)
    await healthy(a, b)
    run_id = await create_run(a, "[[tokens 40]] [[delay 100]] go", "stall-restart")
    on_b = Tap(b, run_id)
    await eventually(lambda: on_b.count("message.delta") >= 2)
    a.proc.send_signal(signal.SIGSTOP)
    try:
        await eventually(
            lambda: on_b.end is not None, timeout=GRACE + 15, interval=0.05, what="b ends the run"
        )
        await world.restart_redis_empty()
    finally:
        a.proc.send_signal(signal.SIGCONT)
    end = await one_ending([a, b], run_id, world.dsn, taps=(on_b,))
    assert (end["event"], end["error_code"]) == ("run.failed", "owner_lost"), end
    await eventually(lambda: "was ended by another instance" in "".join(a.log), what="a fenced")
    rows = await transcript(world.dsn, "stall-restart")
    assert all(meta.get("cut_off") for role, text, meta in rows if role == "assistant" and text), rows


async def test_a_dead_owners_run_that_redis_forgot_ends_once_after_the_grace_period(world: World) -> None:
    # The owner is killed and Redis restarts empty: nothing on the bus says the run exists. It is
    # ended (owner_lost) only once the bus has been back for the grace period with nobody
    # announcing it again, and then once, the same way for every reader and record.
    a, b = world.instances(2)
    await healthy(a, b)
    run_id = await create_run(a, "[[tokens 200]] [[delay 100]] go", "dead-forgotten")
    await eventually(lambda: _running(b, run_id), timeout=20, interval=0.1, what="the run streaming on a")
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(10)
    await world.restart_redis_empty()
    back = time.monotonic()
    answers: list[tuple[float, str]] = []

    async def ended() -> bool:
        reply = await call(b, "GET", f"/v1/runs/{run_id}")
        assert reply.status in (200, 503), reply.text
        if reply.status == 200:
            answers.append((time.monotonic() - back, reply.json["status"]))
        return bool(answers) and answers[-1][1] == "failed"

    await eventually(ended, timeout=GRACE + 30, interval=0.2, what="the forgotten run ended")
    # Asked all along, it stayed as it was until the bus had been back for the grace period.
    assert all(status == "running" for took, status in answers[:-1]), answers
    assert answers[-1][0] >= GRACE - 0.5, answers
    end = await one_ending([b], run_id, world.dsn)
    assert (end["event"], end["error_code"]) == ("run.failed", "owner_lost"), end
    # The conversation is free again on the surviving instance.
    follow = await create_run(b, "still there?", "dead-forgotten")
    assert (await wait_status(b, follow, "completed"))["output"] == "You said: still there?"


async def _running(server: Any, run_id: str) -> bool:
    reply = await call(server, "GET", f"/v1/runs/{run_id}")
    return reply.status == 200 and reply.json["status"] == "running" and reply.json["last_seq"] >= 3
