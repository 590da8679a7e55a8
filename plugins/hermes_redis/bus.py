"""Run events on Redis Streams, the shared run record, and control between instances.

Each run's events go to its own stream with entry id ``{seq}-0`` (the run's event sequence
number), so a reader on any instance resumes from ``Last-Event-ID`` with ``XREAD``. Writes are
queued and sent in pipelined batches by one task, in order.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from hermes_redis import keys
from hermes_redis.control import ControlLoop
from hermes_redis.outage import Outage

log = logging.getLogger("hermes.redis")
BATCH = 2000
RETRY_S = 0.5
MAX_QUEUED = 200_000
ControlHandler = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


class RedisRunBus:
    """The ``redis`` run bus (docs/plugin-hooks.md#hermes_run_buses)."""

    name = "redis"

    def __init__(
        self,
        url: str,
        *,
        instance_id: str,
        heartbeat_s: float,
        journal_events: int = 10000,
        retention_s: float = 3600,
    ) -> None:
        import redis.asyncio as aioredis

        self.url = url
        self.instance_id = instance_id
        self.heartbeat_s = heartbeat_s
        self.journal_events = journal_events
        self.retention_s = max(1, int(retention_s))
        # redis-py's declared reply types are unions of every RESP shape; replies are read as
        # the commands define them (decode_responses: str).
        # Bounded waits: a server that does not answer is an error, never a hang (blocking reads
        # ask for at most a few seconds).
        self.client: Any = aioredis.from_url(
            url, decode_responses=True, socket_connect_timeout=3, socket_timeout=15
        )
        self._queue: collections.deque[tuple[str, tuple[Any, ...]]] = collections.deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None
        self.control = ControlLoop(self)
        self._write_outage = Outage("writing run events")
        self.dropped = 0
        # The shared records of this instance's unsettled runs, as last sent: run id →
        # (principal, session id, status JSON). A Redis that restarted empty is told them again.
        self._open: dict[str, tuple[str, str, str]] = {}

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self, on_control: ControlHandler) -> None:
        """Check the server, announce this instance and start its tasks.

        :raises ConnectionError: the server cannot be reached (one clear start-up error).
        """
        import redis.exceptions

        try:
            await self.client.ping()
        except (redis.exceptions.RedisError, OSError) as exc:
            raise ConnectionError(f"Redis at {self.server()} is not reachable: {exc}") from None
        self._writer = asyncio.create_task(self._write_loop(), name="hermes-redis-writer")
        await self.control.start(on_control)

    async def close(self) -> None:
        """Send what is queued, stop heartbeating (the record goes at once) and disconnect."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), 5)
        await self.control.stop()
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        await self.client.aclose()

    def server(self) -> str:
        """Return ``host:port/db`` of the server, without credentials."""
        kwargs = self.client.connection_pool.connection_kwargs
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"

    async def diagnostics(self) -> dict[str, Any]:
        """Return a health report: reachable, where, which instance, what is queued."""
        try:
            started = time.perf_counter()
            await self.client.ping()
            ok, error, message = True, None, ""
            took = round((time.perf_counter() - started) * 1000, 2)
        except Exception as exc:  # any failure is reported, never raised
            ok, error, took = False, type(exc).__name__, None
            message = f"Redis at {self.server()} is not reachable: {exc}"
        report: dict[str, Any] = {
            "ok": ok,
            "backend": "redis",
            "server": self.server(),
            "instance_id": self.instance_id,
            "ping_ms": took,
            "queued": len(self._queue),
        }
        if error:
            report["error"] = error
            report["message"] = message
        return report

    # -- writing (the owner) -------------------------------------------------------------------
    def publish(self, run_id: str, seq: int, payload: dict[str, Any], terminal: bool) -> None:
        """Queue one event of a run this instance owns; sent in order, in batches."""
        self._queue.append(("event", (run_id, seq, json.dumps(payload, separators=(",", ":")), terminal)))
        self._kick()

    def claim(self, run_id: str, principal: str, session_id: str, status: dict[str, Any]) -> None:
        """Queue the run's shared record: this instance owns it."""
        data = json.dumps(status)
        self._open[run_id] = (principal, session_id, data)
        self._queue.append(("claim", (run_id, principal, session_id, data)))
        self._kick()

    def update(self, run_id: str, status: dict[str, Any], terminal: bool) -> None:
        """Queue the run's latest status for other instances."""
        data = json.dumps(status)
        held = self._open.get(run_id)
        if terminal:
            self._open.pop(run_id, None)
        elif held is not None:
            self._open[run_id] = (held[0], held[1], data)
        self._queue.append(("status", (run_id, data, terminal)))
        self._kick()

    def reclaim(self) -> int:
        """Send the records of every unsettled run of this instance again (after Redis lost them:
        a restart without persistence, a fail-over); return how many."""
        for run_id, (principal, session_id, data) in self._open.items():
            self._queue.append(("claim", (run_id, principal, session_id, data)))
        if self._open:
            self._kick()
        return len(self._open)

    def _kick(self) -> None:
        self._idle.clear()
        self._wake.set()

    async def flush(self) -> None:
        """Wait until everything queued so far was sent."""
        while self._queue or not self._idle.is_set():
            self._kick()
            await self._idle.wait()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                try:
                    await self._send(batch)
                    self._write_outage.succeeded()
                except Exception as exc:
                    # The server is away: keep the batch (in order) and try again, so readers
                    # elsewhere get every event once it is back; past a bound, drop the oldest.
                    self._write_outage.failed(exc)
                    self._queue.extendleft(reversed(batch))
                    while len(self._queue) > MAX_QUEUED:
                        self._queue.popleft()
                        self.dropped += 1
                    await asyncio.sleep(RETRY_S)
            self._idle.set()

    async def _send(self, batch: list[tuple[str, tuple[Any, ...]]]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for kind, args in batch:
            if kind == "event":
                run_id, seq, data, terminal = args
                stream = keys.run_stream(run_id)
                fields = {"d": data, "t": "1"} if terminal else {"d": data}
                pipe.xadd(stream, fields, id=f"{seq}-0", maxlen=self.journal_events, approximate=True)
                if terminal:
                    pipe.expire(stream, self.retention_s)
                    pipe.srem(keys.open_runs(self.instance_id), run_id)
            elif kind == "claim":
                run_id, who, session_id, status = args
                record = keys.run_record(run_id)
                mapping = {"owner": self.instance_id, "principal": who, "session_id": session_id}
                pipe.hset(record, mapping={**mapping, "status": status})
                pipe.expire(record, self.retention_s * 24)
                pipe.sadd(keys.open_runs(self.instance_id), run_id)
            else:
                run_id, status, terminal = args
                pipe.hset(keys.run_record(run_id), "status", status)
        results = await pipe.execute(raise_on_error=False)
        for result in results:
            if isinstance(result, Exception):
                # An explicit id at or below the stream's last one: someone else (a reaper) ended
                # the run first; the event is not written twice.
                self.dropped += 1
                log.warning("run bus write refused: %s", result)

    # -- reading (any instance) ----------------------------------------------------------------
    async def lookup(self, run_id: str) -> dict[str, Any] | None:
        """Return the run's shared record: ``owner``, ``principal``, ``session_id``, ``status``,
        ``alive`` (the owner still heartbeats); None for an unknown run."""
        record = await self.client.hgetall(keys.run_record(run_id))
        if not record or "owner" not in record:
            return None
        alive = bool(await self.client.exists(keys.alive(record["owner"])))
        status = json.loads(record.get("status") or "{}")
        return {
            "owner": record["owner"],
            "principal": record.get("principal", ""),
            "session_id": record.get("session_id", ""),
            "status": status,
            "alive": alive,
        }

    async def bounds(self, run_id: str) -> tuple[int, int] | None:
        """Return the first and last seq the run's stream holds; None when it holds nothing."""
        stream = keys.run_stream(run_id)
        first = await self.client.xrange(stream, count=1)
        if not first:
            return None
        last = await self.client.xrevrange(stream, count=1)
        return _seq(first[0][0]), _seq(last[0][0])

    async def read(self, run_id: str, after: int, block_s: float) -> list[tuple[int, str, bool]]:
        """Return events with ``seq > after`` as ``(seq, json, terminal)``, waiting up to
        ``block_s`` for the first one."""
        found = await self.client.xread(
            {keys.run_stream(run_id): f"{after}-0"}, count=BATCH, block=max(1, int(block_s * 1000))
        )
        out: list[tuple[int, str, bool]] = []
        for _, entries in found or ():
            for entry_id, fields in entries:
                out.append((_seq(entry_id), fields.get("d", "{}"), fields.get("t") == "1"))
        return out

    # -- control -------------------------------------------------------------------------------
    async def send(
        self, owner: str, command: str, run_id: str, args: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Deliver a command to the owning instance and return its answer.

        :returns: the owner's answer, or ``{"error": "owner_lost"}`` when the owner no longer
            heartbeats, or ``{"error": "owner_timeout"}`` when it did not answer in time.
        """
        return await self.control.send(owner, command, run_id, args, timeout_s)

    async def reap(self, run_id: str) -> bool:
        """End the run with ``run.failed`` (``owner_lost``) if its owner stopped heartbeating.

        :returns: True when the run is (now) settled by a reaper.
        """
        return await self.control.reap_run(run_id)

    def token(self) -> str:
        return secrets.token_hex(8)


def _seq(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])
