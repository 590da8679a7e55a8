"""The ``redis`` bus on its own, against real Redis servers: control answers, a silent owner, a
gone owner, events published while the server is away arriving once it is back, and payloads
the bus hands back byte for byte without parsing them."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest

from hermes_core import OwnerGone, RunBus, RunEnd, RunOwner, RunStatus
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
        bus.claim("run_y", "me", "s1", RunStatus('{"status":"running"}', status="running"))
        for seq in (1, 2):
            bus.publish("run_y", seq, delta(seq), False)
        await asyncio.wait_for(bus.flush(), scaled(10))
        assert [e[0] for e in await bus.client.xrange("hermes:run:run_y")] == ["1-0", "2-0"]
        stop()
        for seq in (3, 4):
            bus.publish("run_y", seq, delta(seq), False)
        final = RunStatus('{"status":"completed"}', last_seq=5, status="completed")
        settled = asyncio.create_task(bus.settle("run_y", RunEnd(5, '{"event":"run.completed"}', final)))
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


def delta(seq: int) -> str:
    return json.dumps({"event": "message.delta", "seq": seq})


class EndsRuns:
    """An owner side that decides a gone owner's end, as the API server does (``RunOwner``)."""

    def __init__(self) -> None:
        self.asked: list[tuple[OwnerGone, RunStatus]] = []
        self.reaped_runs: list[str] = []
        self.held: list[tuple[str, int]] = []
        self.released: list[str] = []

    async def owner_gone(self, gone: OwnerGone, status: RunStatus) -> RunEnd:
        self.asked.append((gone, status))
        seq = gone.last_seq + 1
        payload = json.dumps({"event": "run.gone_for_test", "run_id": gone.run_id, "seq": seq})
        return RunEnd(seq, payload, RunStatus('{"status":"failed"}', last_seq=seq, status="failed"))

    def hold(self, run_id: str, upto: int) -> None:
        self.held.append((run_id, upto))

    def release(self, run_id: str) -> None:
        self.released.append(run_id)

    def reaped(self, run_id: str, principal: str, status: RunStatus) -> None:
        self.reaped_runs.append(run_id)

    def shown(self, run_id: str, upto: int) -> None:
        return None

    def lost(self, run_id: str, status: RunStatus) -> None:
        return None

    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, RunStatus]:
        return {}


async def test_a_gone_owners_run_ends_with_the_event_the_owner_side_decides(redis_dsn: str) -> None:
    """The bus writes no event of its own: it reports the owner gone with the run's last seq and
    commits what the owner side (the API server) returns, numbered right after it."""
    owner = RedisRunBus(redis_dsn, instance_id="gone-owner-1", heartbeat_s=0.2, owner_grace_s=1.5)
    reaper = RedisRunBus(redis_dsn, instance_id="reaper-1", heartbeat_s=0.2, owner_grace_s=1.5)
    ends = EndsRuns()
    side: RunOwner = ends  # the bus and its owner side meet through the kernel's contract
    bus: RunBus = reaper
    await owner.start(echo)
    await bus.start(echo, side)
    try:
        owner.claim(
            "run_gone", "me", "s1", RunStatus('{"status":"running","output":"par"}', status="running")
        )
        for seq in (1, 2):
            owner.publish("run_gone", seq, delta(seq), False)
        await asyncio.wait_for(owner.flush(), scaled(10))
        await owner.close()  # stops heartbeating: gone
        await eventually(lambda: reaper.reap("run_gone"), timeout=20, what="the run reaped")
        (gone, status), *_ = ends.asked
        last_seq = gone.last_seq  # "owner gone, last seq N"
        assert gone.run_id == "run_gone" and gone.owner == "gone-owner-1"
        assert status.document == '{"status":"running","output":"par"}' and status.status == "running"
        entries = await reaper.client.xrange("hermes:run:run_gone")
        assert last_seq >= 2 and entries[-1][0] == f"{last_seq + 1}-0" and entries[-1][1]["t"] == "1"
        # The owner had reserved seqs past the stream's end; the owner side may number its end
        # anywhere up to right after them, and chose right after the stream's end: no gap.
        assert gone.reserved > last_seq, gone
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
        bus.claim("run_lease", "me", "s1", RunStatus('{"status":"running"}', status="running"))
        bus.publish("run_lease", 1, json.dumps({"event": "run.started", "seq": 1}), False)
        await asyncio.wait_for(bus.flush(), scaled(10))
        assert owner.held == []
        # The heartbeat has not gone through for longer than the lease (a stall, a partition).
        bus.owned.lease_until = time.monotonic() - 0.01
        bus.publish("run_lease", 2, delta(2), False)
        bus.publish("run_lease", 3, delta(3), False)
        assert owner.held == [("run_lease", 1)]
        await eventually(lambda: owner.released == ["run_lease"], timeout=10, what="the hold ended")
        bus.publish("run_lease", 4, delta(4), False)
        assert owner.held == [("run_lease", 1)]
    finally:
        await bus.close()


async def test_payloads_are_opaque_to_the_bus(redis_dsn: str) -> None:
    """What the bus needs of an event or a status is given beside it (``seq``, ``RunStatus``'s
    fields); the payload and the status document are handed back byte for byte, even when they
    are not JSON at all (the bus never parses them)."""
    owner = RedisRunBus(redis_dsn, instance_id="opaque-owner-1", heartbeat_s=0.2)
    reader = RedisRunBus(redis_dsn, instance_id="opaque-reader-1", heartbeat_s=0.2)
    await owner.start(echo)
    await reader.start(echo)
    try:
        document = "not json: \u00e9 {"
        owner.claim("run_opaque", "me", "s9", RunStatus(document, last_seq=0, status="running"))
        owner.publish("run_opaque", 1, "<event one, not JSON>", False)
        owner.publish("run_opaque", 2, '{"seq": "no number here"}', False)
        owner.update("run_opaque", RunStatus("status two", last_seq=2, status="running"), False)
        await asyncio.wait_for(owner.flush(), scaled(10))
        events = await reader.read("run_opaque", 0, 1.0)
        assert [(e.seq, e.payload, e.terminal) for e in events] == [
            (1, "<event one, not JSON>", False),
            (2, '{"seq": "no number here"}', False),
        ]
        record = await reader.lookup("run_opaque")
        assert record is not None and record["session_id"] == "s9"
        assert record["status"] == RunStatus("status two", last_seq=2, status="running")
        final = RunStatus(
            "ended \n\t as text", last_seq=3, status="failed", error_code="boom", session_id="s9"
        )
        assert await owner.settle("run_opaque", RunEnd(3, "the end", final)) is None
        events = await reader.read("run_opaque", 2, 1.0)
        assert [(e.seq, e.payload, e.terminal) for e in events] == [(3, "the end", True)]
        ended = await reader.lookup("run_opaque")
        assert ended is not None and ended["status"] == final
    finally:
        await owner.close()
        await reader.close()
        await reader.client.delete("hermes:run:run_opaque", "hermes:runinfo:run_opaque")
