"""Heartbeats, the per-instance control stream, and ending a dead owner's runs (``owner_lost``).

A command for a run goes to ``hermes:ctl:{owner}``; the owner reads it through a consumer group
(acknowledged once applied, so a command survives the owner's reconnect) and pushes its answer on
a one-off reply list the sender waits on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from hermes_redis import keys
from hermes_redis.outage import Outage

if TYPE_CHECKING:
    from hermes_redis.bus import ControlHandler, RedisRunBus

log = logging.getLogger("hermes.redis")
LOST_MESSAGE = "The instance that owned this run stopped answering; the run ended."


class ControlLoop:
    """This instance's heartbeat, control reader and reaper."""

    def __init__(self, bus: RedisRunBus) -> None:
        self.bus = bus
        self.client: Any = bus.client
        self._tasks: list[asyncio.Task[None]] = []
        self._handler: ControlHandler | None = None

    @property
    def ttl_ms(self) -> int:
        return max(100, int(self.bus.heartbeat_s * 3000))

    async def start(self, handler: ControlHandler) -> None:
        self._handler = handler
        me = self.bus.instance_id
        await self.client.set(keys.alive(me), str(time.time()), px=self.ttl_ms)
        await self.client.sadd(keys.INSTANCES, me)
        await self._create_group()
        self._tasks = [
            asyncio.create_task(self._heartbeat_loop(), name="hermes-redis-heartbeat"),
            asyncio.create_task(self._control_loop(), name="hermes-redis-control"),
        ]

    async def _create_group(self) -> None:
        """Create this instance's control stream and its consumer group (if they are missing)."""
        import redis.exceptions

        try:
            await self.client.xgroup_create(
                keys.control(self.bus.instance_id), keys.CONTROL_GROUP, id="0", mkstream=True
            )
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.client.delete(keys.alive(self.bus.instance_id))

    # -- heartbeat and reaper ------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        me = self.bus.instance_id
        heartbeat = Outage("the heartbeat")
        while True:
            await asyncio.sleep(self.bus.heartbeat_s)
            try:
                await self.client.set(keys.alive(me), str(time.time()), px=self.ttl_ms)
                if await self.client.sadd(keys.INSTANCES, me):
                    await self._announce_again()
                await self.reap_dead()
                heartbeat.succeeded()
            except Exception as exc:
                heartbeat.failed(exc)

    async def _announce_again(self) -> None:
        """Redis no longer knew this instance (it restarted empty, or failed over): make the
        control group again and send the records of the runs this instance is serving, so other
        instances can find, follow and command them again."""
        await self._create_group()
        count = self.bus.reclaim()
        log.warning("the run bus lost its records (a Redis restart?); announced %d open run(s) again", count)

    async def reap_dead(self) -> None:
        """End the open runs of every instance that stopped heartbeating (one reaper each)."""
        for inst in await self.client.smembers(keys.INSTANCES):
            if inst == self.bus.instance_id or await self.client.exists(keys.alive(inst)):
                continue
            if not await self.client.set(keys.reaping(inst), self.bus.instance_id, nx=True, px=10_000):
                continue
            for run_id in await self.client.smembers(keys.open_runs(inst)):
                await self.reap_run(run_id)
            await self.client.delete(keys.open_runs(inst), keys.control(inst))
            await self.client.srem(keys.INSTANCES, inst)

    async def reap_run(self, run_id: str) -> bool:
        """Append ``run.failed`` (``owner_lost``) unless the owner is alive or the run settled."""
        import redis.exceptions

        record = await self.bus.lookup(run_id)
        if record is None or record["alive"]:
            return False
        stream = keys.run_stream(run_id)
        for _ in range(5):
            last = await self.client.xrevrange(stream, count=1)
            if last and last[0][1].get("t") == "1":
                return True
            seq = int(last[0][0].split("-", 1)[0]) + 1 if last else 1
            status = record["status"]
            fields = {
                "error": LOST_MESSAGE,
                "output": status.get("output", ""),
                "usage": status.get("usage"),
                "completed": False,
                "partial": bool(status.get("output")),
                "error_code": "owner_lost",
                "turn_exit_reason": "error",
                "pending_steer": None,
            }
            payload = {
                "event": "run.failed",
                "run_id": run_id,
                "seq": seq,
                "timestamp": time.time(),
                **fields,
            }
            try:
                await self.client.xadd(
                    stream, {"d": json.dumps(payload, separators=(",", ":")), "t": "1"}, id=f"{seq}-0"
                )
            except redis.exceptions.ResponseError:
                continue  # someone appended first: look again
            status.update(fields)
            status.update(
                status="failed", updated_at=payload["timestamp"], last_event="run.failed", last_seq=seq
            )
            status["terminal_event"] = payload
            pipe = self.client.pipeline(transaction=False)
            pipe.hset(keys.run_record(run_id), "status", json.dumps(status))
            pipe.expire(stream, self.bus.retention_s)
            pipe.srem(keys.open_runs(record["owner"]), run_id)
            await pipe.execute()
            log.warning("run %s ended: its owner %s is gone", run_id, record["owner"])
            return True
        return False

    # -- control -------------------------------------------------------------------------------
    async def _control_loop(self) -> None:
        me = self.bus.instance_id
        stream = keys.control(me)
        reading = Outage("reading commands for this instance's runs")
        while True:
            try:
                found = await self.client.xreadgroup(
                    keys.CONTROL_GROUP, me, {stream: ">"}, count=50, block=1000
                )
                reading.succeeded()
                for _, entries in found or ():
                    for entry_id, fields in entries:
                        await self._apply(fields)
                        await self.client.xack(stream, keys.CONTROL_GROUP, entry_id)
                        await self.client.xdel(stream, entry_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if "NOGROUP" in str(exc):
                    # Redis lost the stream and its group (a restart without persistence): make
                    # them again and keep reading; commands sent since then are in the new stream.
                    with contextlib.suppress(Exception):
                        await self._create_group()
                        continue
                reading.failed(exc)
                await asyncio.sleep(0.5)

    async def _apply(self, fields: dict[str, str]) -> None:
        assert self._handler is not None
        try:
            args = json.loads(fields.get("args") or "{}")
            answer = await self._handler(fields.get("command", ""), fields.get("run_id", ""), args)
        except Exception as exc:
            log.warning("control command failed", exc_info=True)
            answer = {"error": "owner_failed", "message": type(exc).__name__}
        reply = fields.get("reply")
        if reply:
            pipe = self.client.pipeline(transaction=False)
            pipe.rpush(reply, json.dumps(answer))
            pipe.expire(reply, 30)
            await pipe.execute()

    async def send(
        self, owner: str, command: str, run_id: str, args: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        if not await self.client.exists(keys.alive(owner)):
            return {"error": "owner_lost"}
        reply = keys.reply(self.bus.token())
        entry = {"command": command, "run_id": run_id, "args": json.dumps(args), "reply": reply}
        await self.client.xadd(keys.control(owner), entry)
        answer = await self.client.blpop([reply], timeout=timeout_s)
        if answer is None:
            alive = await self.client.exists(keys.alive(owner))
            return {"error": "owner_timeout" if alive else "owner_lost"}
        result: dict[str, Any] = json.loads(answer[1])
        return result
