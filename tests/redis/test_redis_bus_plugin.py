"""The ``redis`` bus on its own, against real Redis servers: control answers, a silent owner, a
gone owner, and events published while the server is away arriving once it is back."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from hermes_redis.bus import RedisRunBus
from tests.timing import eventually, scaled


async def echo(
    command: str, run_id: str, args: dict[str, Any], traceparent: str | None = None
) -> dict[str, Any]:
    return {"body": {"command": command, "run_id": run_id, "args": args, "traceparent": traceparent}}


async def test_commands_reach_the_owner_and_a_silent_or_gone_owner_is_reported(redis_dsn: str) -> None:
    owner = RedisRunBus(redis_dsn, instance_id="owner-1", heartbeat_s=0.2)
    other = RedisRunBus(redis_dsn, instance_id="other-1", heartbeat_s=0.2)
    await owner.start(echo)
    await other.start(echo)
    try:
        answer = await other.send("owner-1", "stop", "run_x", {"why": "test"}, scaled(5))
        body = {"command": "stop", "run_id": "run_x", "args": {"why": "test"}, "traceparent": None}
        assert answer == {"body": body}
        # The sender's trace context travels in the envelope: the args reach the owner untouched.
        trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        answer = await other.send("owner-1", "stop", "run_x", {"why": "test"}, scaled(5), traceparent=trace)
        assert answer == {"body": {**body, "traceparent": trace}}
        # Alive (it heartbeats) but never reads its control stream: a timeout, not a hang.
        await other.client.set("hermes:inst:silent-1", "1", px=60_000)
        assert await other.send("silent-1", "stop", "run_x", {}, 0.3) == {"error": "owner_timeout"}
        # No heartbeat at all: gone.
        assert await other.send("never-1", "stop", "run_x", {}, 0.3) == {"error": "owner_lost"}
        await owner.close()
        assert await other.send("owner-1", "stop", "run_x", {}, 0.3) == {"error": "owner_lost"}
    finally:
        await owner.close()
        await other.close()


async def test_events_published_while_redis_is_away_arrive_once_it_is_back(
    private_redis: tuple[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    url, (start, stop) = private_redis
    bus = RedisRunBus(url, instance_id="owner-2", heartbeat_s=0.2)

    async def up() -> bool:
        try:
            return bool(await bus.client.ping())
        except Exception:
            return False

    await eventually(up, timeout=20, interval=0.05, what="private redis")
    await bus.start(echo)
    try:
        bus.claim("run_y", "me", "s1", {"status": "running"})
        for seq in (1, 2):
            bus.publish("run_y", seq, {"event": "message.delta", "seq": seq}, False)
        await asyncio.wait_for(bus.flush(), scaled(10))
        assert [e[0] for e in await bus.client.xrange("hermes:run:run_y")] == ["1-0", "2-0"]
        stop()
        for seq in (3, 4):
            bus.publish("run_y", seq, {"event": "message.delta", "seq": seq}, False)
        end = {"event": "run.completed", "seq": 5}
        settled = asyncio.create_task(
            bus.settle("run_y", end, {"status": "completed", "terminal_event": end})
        )
        down = await bus.diagnostics()
        assert down["ok"] is False and "not reachable" in down["message"]
        with caplog.at_level(logging.WARNING, logger="hermes.redis"):
            await eventually(lambda: "retrying" in caplog.text, timeout=20, what="a failed write")
        assert not settled.done()  # the end waits for the bus: it is committed there or nowhere
        start()  # a new, empty server (no persistence): what was written before is gone
        # The run's record went with it: the writes wait until the run is claimed again.
        assert await asyncio.wait_for(settled, scaled(20)) is None
        entries = await bus.client.xrange("hermes:run:run_y")
        assert [e[0] for e in entries] == ["3-0", "4-0", "5-0"] and entries[-1][1]["t"] == "1"
        assert bus.dropped == 0
    finally:
        await bus.close()


class EndsRuns:
    """An owner side that decides a gone owner's end, as the API server does (``RunOwner``)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int, dict[str, Any]]] = []
        self.reserved: list[int] = []
        self.reaped_runs: list[str] = []
        self.held: list[tuple[str, int]] = []
        self.released: list[str] = []

    async def owner_gone(
        self, run_id: str, last_seq: int, reserved: int, status: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.asked.append((run_id, last_seq, status))
        self.reserved.append(reserved)
        payload = {"event": "run.gone_for_test", "run_id": run_id, "seq": last_seq + 1}
        return payload, {**status, "status": "failed", "terminal_event": payload}

    def hold(self, run_id: str, upto: int) -> None:
        self.held.append((run_id, upto))

    def release(self, run_id: str) -> None:
        self.released.append(run_id)

    def reaped(self, run_id: str, principal: str, status: dict[str, Any]) -> None:
        self.reaped_runs.append(run_id)

    def shown(self, run_id: str, upto: int) -> None:
        return None

    def lost(self, run_id: str, status: dict[str, Any]) -> None:
        return None

    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        return {}


async def test_a_gone_owners_run_ends_with_the_event_the_owner_side_decides(redis_dsn: str) -> None:
    """The bus writes no event of its own: it reports the owner gone with the run's last seq and
    commits what the owner side (the API server) returns, numbered right after it."""
    owner = RedisRunBus(redis_dsn, instance_id="gone-owner-1", heartbeat_s=0.2, owner_grace_s=1.5)
    reaper = RedisRunBus(redis_dsn, instance_id="reaper-1", heartbeat_s=0.2, owner_grace_s=1.5)
    ends = EndsRuns()
    await owner.start(echo)
    await reaper.start(echo, ends)
    try:
        owner.claim("run_gone", "me", "s1", {"status": "running", "output": "par"})
        for seq in (1, 2):
            owner.publish("run_gone", seq, {"event": "message.delta", "seq": seq}, False)
        await asyncio.wait_for(owner.flush(), scaled(10))
        await owner.close()  # stops heartbeating: gone
        await eventually(lambda: reaper.reap("run_gone"), timeout=20, what="the run reaped")
        (run_id, last_seq, status), *_ = ends.asked
        assert run_id == "run_gone" and status["output"] == "par"
        entries = await reaper.client.xrange("hermes:run:run_gone")
        assert last_seq >= 2 and entries[-1][0] == f"{last_seq + 1}-0" and entries[-1][1]["t"] == "1"
        # The owner had reserved seqs past the stream's end; the owner side may number its end
        # anywhere up to right after them, and chose right after the stream's end: no gap.
        assert ends.reserved[0] > last_seq, ends.reserved
        assert '"run.gone_for_test"' in entries[-1][1]["d"]
        assert ends.reaped_runs == ["run_gone"]
    finally:
        await owner.close()
        await reaper.close()


async def test_an_owner_whose_liveness_lease_lapsed_holds_its_runs_events(redis_dsn: str) -> None:
    """An owner shows its own readers a run's events only while its heartbeat keeps it alive on
    the bus with time to spare (half the grace period): past that, a reaper may soon number the
    run's end after what the owner showed, so the owner holds what comes next until a heartbeat
    and a check of its records vouch for it again."""
    bus = RedisRunBus(redis_dsn, instance_id="lease-owner-1", heartbeat_s=0.2, owner_grace_s=1.5)
    owner = EndsRuns()
    await bus.start(echo, owner)
    try:
        bus.claim("run_lease", "me", "s1", {"status": "running"})
        bus.publish("run_lease", 1, {"event": "run.started", "seq": 1}, False)
        await asyncio.wait_for(bus.flush(), scaled(10))
        assert owner.held == []
        # The heartbeat has not gone through for longer than the lease (a stall, a partition).
        bus.owned.lease_until = time.monotonic() - 0.01
        bus.publish("run_lease", 2, {"event": "message.delta", "seq": 2}, False)
        bus.publish("run_lease", 3, {"event": "message.delta", "seq": 3}, False)
        assert owner.held == [("run_lease", 1)]
        await eventually(lambda: owner.released == ["run_lease"], timeout=10, what="the hold ended")
        bus.publish("run_lease", 4, {"event": "message.delta", "seq": 4}, False)
        assert owner.held == [("run_lease", 1)]
    finally:
        await bus.close()
