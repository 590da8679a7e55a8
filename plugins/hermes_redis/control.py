"""Heartbeats, the per-instance control stream, and ending a dead owner's runs (``owner_lost``).

A command for a run goes to ``hermes:ctl:{owner}``; the owner reads it through a consumer group
(acknowledged once applied, so a command survives the owner's reconnect) and pushes its answer on
a one-off reply list the sender waits on.

An instance counts as alive while its heartbeat key lives: ``owner_grace_s`` after its last
heartbeat, so a stall shorter than that (a GC pause, a frozen VM) ends nothing. A dead owner's
runs are ended in one script each (``scripts.REAP``), only once the bus clock says Redis has been
up without a break for the grace period. The end itself is the API server's: the bus reports the
owner gone with the run's last seq (``RunOwner.owner_gone``) and commits the event it gets back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from hermes_redis import keys, scripts, status_text
from hermes_redis.outage import Outage

if TYPE_CHECKING:
    from hermes_core import ControlHandler, RunStatus
    from hermes_redis.bus import RedisRunBus

log = logging.getLogger("hermes.redis")


class ControlLoop:
    """This instance's heartbeat, control reader and reaper."""

    def __init__(self, bus: RedisRunBus) -> None:
        self.bus = bus
        self.client: Any = bus.client
        self._tasks: list[asyncio.Task[None]] = []
        self._handler: ControlHandler | None = None

    @property
    def ttl_ms(self) -> int:
        """How long this instance counts as alive after a heartbeat: the owner grace period."""
        return max(100, int(self.bus.owner_grace_s * 1000))

    @property
    def lease_s(self) -> float:
        """How long after sending a heartbeat this instance may still show its runs' events to
        its own readers: half the grace period, so it stops well before any reaper may take it
        for dead (its liveness key lives the whole grace period after the heartbeat arrived)."""
        return self.bus.owner_grace_s / 2

    async def start(self, handler: ControlHandler) -> None:
        self._handler = handler
        sent = time.monotonic()
        await self.heartbeat()
        self.bus.owned.renew(sent + self.lease_s)
        await self.create_group()
        self._tasks = [
            asyncio.create_task(self._heartbeat_loop(), name="hermes-redis-heartbeat"),
            asyncio.create_task(self._control_loop(), name="hermes-redis-control"),
        ]

    async def create_group(self) -> None:
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
    async def heartbeat(self) -> bool:
        """Say this instance is alive and keep the bus clock; True when Redis did not know it."""
        added, _ = await self.client.eval(
            scripts.HEARTBEAT,
            3,
            keys.alive(self.bus.instance_id),
            keys.INSTANCES,
            keys.CLOCK,
            self.bus.instance_id,
            str(self.ttl_ms),
            str(self.bus.gap_s),
        )
        return bool(added)

    async def _heartbeat_loop(self) -> None:
        heartbeat = Outage("the heartbeat")
        owned = self.bus.owned
        while True:
            await asyncio.sleep(self.bus.heartbeat_s)
            try:
                sent = time.monotonic()
                if await self.heartbeat():
                    # Redis no longer listed this instance: it restarted empty, failed over, or a
                    # reaper took this instance for dead (it stalled past the grace period).
                    owned.lost()
                await owned.announce_if_lost()
                await owned.check()
                owned.renew(sent + self.lease_s)
                await self.reap_dead()
                heartbeat.succeeded()
            except Exception as exc:
                heartbeat.failed(exc)

    async def reap_dead(self) -> None:
        """End the open runs of every instance that stopped heartbeating (one reaper each), once
        the bus has been up long enough to be sure."""
        for inst in await self.client.smembers(keys.INSTANCES):
            if inst == self.bus.instance_id or await self.client.exists(keys.alive(inst)):
                continue
            if not await self.client.set(keys.reaping(inst), self.bus.instance_id, nx=True, px=10_000):
                continue
            done = True
            for run_id in await self.client.smembers(keys.open_runs(inst)):
                done = await self.reap_run(run_id) and done
            if done:
                await self.client.delete(keys.open_runs(inst), keys.control(inst))
                await self.client.srem(keys.INSTANCES, inst)

    async def reap_run(
        self, run_id: str, principal: str | None = None, known: RunStatus | None = None
    ) -> bool:
        """Append the run's end (``RunOwner.owner_gone``) unless the owner is alive, the run
        settled, or the bus has not been up for the grace period yet; True when the run is (now)
        ended.

        :param principal: with ``known``, for a run the bus has no record of (Redis lost it):
            its principal and last known status.
        """
        record_key, stream = keys.run_record(run_id), keys.run_stream(run_id)
        for _ in range(5):
            record = await self.client.hgetall(record_key)
            if not record or "owner" not in record:
                if principal is None or known is None:
                    return False
                answer = await self._reap_unknown(run_id, principal, known)
                if answer == "exists":
                    continue
                return bool(answer == "reaped")
            if record.get("ended") == "1":
                return True
            owner = record["owner"]
            if owner and await self.client.exists(keys.alive(owner)):
                return False
            status = status_text.decode(record.get("status"))
            reserved = record.get("reserved") or "0"
            top = await self.client.xrevrange(stream, count=1)
            last = max(int(top[0][0].split("-", 1)[0]) if top else 0, status.last_seq)
            # The owner side numbers the end right after the last event the owner can have
            # shown: past what the stream holds, at most past what it had reserved.
            end = await self.bus.owned.owner_gone(run_id, owner, last, max(last, int(reserved)), status)
            if end is None:
                return False  # nothing here to decide the run's end (a bus without its server)
            final = status_text.encode(end.status)
            answer = await self.client.eval(
                scripts.REAP,
                5,
                record_key,
                stream,
                keys.CLOCK,
                keys.alive(owner),
                keys.open_runs(owner),
                record.get("epoch") or "1",
                reserved,
                str(end.seq),
                end.payload,
                final,
                str(self.bus.retention_s),
                str(self.bus.owner_grace_s),
                str(self.bus.gap_s),
                run_id,
            )
            if answer == "reaped":
                log.warning("run %s ended: its owner %s is gone", run_id, owner or "(unknown)")
                self.bus.owned.reaped(run_id, record.get("principal", ""), end.status)
                return True
            if answer == "ended":
                return True
            if answer != "changed":
                return False  # alive, wait (the bus is too young to tell), missing
        return False

    async def _reap_unknown(self, run_id: str, principal: str, known: RunStatus) -> str:
        stream = keys.run_stream(run_id)
        top = await self.client.xrevrange(stream, count=1)
        last = int(top[0][0].split("-", 1)[0]) if top else 0
        last = max(last, known.last_seq)
        end = await self.bus.owned.owner_gone(run_id, "", last, last, known)
        if end is None:
            return "missing"
        answer: str = await self.client.eval(
            scripts.REAP_UNKNOWN,
            3,
            keys.run_record(run_id),
            stream,
            keys.CLOCK,
            principal,
            known.session_id,
            str(end.seq),
            end.payload,
            status_text.encode(end.status),
            str(self.bus.retention_s),
            str(self.bus.retention_s * 24),
            str(self.bus.owner_grace_s),
            str(self.bus.gap_s),
        )
        if answer == "reaped":
            log.warning("run %s ended: the bus lost it and no instance announced it again", run_id)
            self.bus.owned.reaped(run_id, principal, end.status)
        return answer

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
                        await self.create_group()
                        continue
                reading.failed(exc)
                await asyncio.sleep(0.5)

    async def _apply(self, fields: dict[str, str]) -> None:
        assert self._handler is not None
        try:
            args = json.loads(fields.get("args") or "{}")
            answer = await self._handler(
                fields.get("command", ""), fields.get("run_id", ""), args, fields.get("traceparent") or None
            )
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
        self,
        owner: str,
        command: str,
        run_id: str,
        args: dict[str, Any],
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> dict[str, Any]:
        if not await self.client.exists(keys.alive(owner)):
            return {"error": "owner_lost"}
        reply = keys.reply(self.bus.token())
        entry = {"command": command, "run_id": run_id, "args": json.dumps(args), "reply": reply}
        if traceparent:
            entry["traceparent"] = traceparent  # the envelope's, beside the opaque args
        await self.client.xadd(keys.control(owner), entry)
        answer = await self.client.blpop([reply], timeout=timeout_s)
        if answer is None:
            alive = await self.client.exists(keys.alive(owner))
            return {"error": "owner_timeout" if alive else "owner_lost"}
        result: dict[str, Any] = json.loads(answer[1])
        return result
