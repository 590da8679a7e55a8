"""Run events on Redis Streams, the shared run record, and control between instances.

Each run's events go to its own stream with entry id ``{seq}-0`` (the run's event sequence
number), so a reader on any instance resumes from ``Last-Event-ID`` with ``XREAD``. Writes are
queued and sent in pipelined batches by one task, in order: per run and batch, one script that
writes only while the run's record still names this instance as its owner (fencing, see
:mod:`hermes_redis.scripts`). What a run's owner needs to know back — how far its events may be
shown, that a run was ended elsewhere — goes to the ``RunOwner`` given at start.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

from hermes_core import BusEvent, BusRun, RunEnd, RunStatus
from hermes_redis import keys, scripts, status_text
from hermes_redis.control import ControlLoop
from hermes_redis.outage import Outage
from hermes_redis.owned import Item, Owned, OwnedRuns, Write

log = logging.getLogger("hermes.redis")
BATCH = 2000
RETRY_S = 0.5
MAX_QUEUED = 200_000

if TYPE_CHECKING:
    from hermes_core import ControlHandler, RunOwner


class RedisRunBus:
    """The ``redis`` run bus (docs/plugin-hooks.md#hermes_run_buses): a ``hermes_core.RunBus``."""

    name = "redis"
    shared = True

    def __init__(
        self,
        url: str,
        *,
        instance_id: str,
        heartbeat_s: float,
        owner_grace_s: float = 30.0,
        journal_events: int = 10000,
        retention_s: float = 3600,
    ) -> None:
        import redis.asyncio as aioredis

        self.url = url
        self.instance_id = instance_id
        self.heartbeat_s = heartbeat_s
        self.owner_grace_s = max(owner_grace_s, 3 * heartbeat_s)
        self.journal_events = journal_events
        self.retention_s = max(1, int(retention_s))
        # redis-py's declared reply types are unions of every RESP shape; replies are read as
        # the commands define them (decode_responses: str).
        # Bounded waits: a server that does not answer is an error, never a hang (blocking reads
        # ask for at most a few seconds).
        self.client: Any = aioredis.from_url(
            url, decode_responses=True, socket_connect_timeout=3, socket_timeout=15
        )
        self._queue: collections.deque[Item] = collections.deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None
        self.control = ControlLoop(self)
        self._write_outage = Outage("writing run events")
        self.dropped = 0
        #: The unsettled runs this instance owns (what it claimed, reserved and still has to send).
        self.owned = OwnedRuns(self)

    @property
    def gap_s(self) -> float:
        """A pause between heartbeats longer than this breaks the bus clock (see ``scripts``)."""
        return self.owner_grace_s / 2

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self, on_control: ControlHandler, owner: RunOwner | None = None) -> None:
        """Check the server, announce this instance and start its tasks.

        :param owner: what hears back about this instance's runs (``RunOwner``); none in tests
            of the bus alone.
        :raises ConnectionError: the server cannot be reached (one clear start-up error).
        """
        import redis.exceptions

        self.owned.owner = owner
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
        await self.owned.stop()
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
    def claim(self, run_id: str, principal: str, session_id: str, status: RunStatus) -> None:
        """Queue the run's shared record: this instance owns it."""
        self.owned.add(run_id, principal, session_id, status_text.encode(status))
        self.enqueue(("claim", run_id, ()))

    def publish(self, run_id: str, seq: int, payload: str, terminal: bool) -> None:
        """Queue one event of a run this instance owns; sent in order, in batches.

        A terminal event goes through :meth:`settle`; one published here is sent as an ordinary
        event.
        """
        run = self.owned.get(run_id)
        if run is None:
            return  # not ours (any more): it was ended elsewhere
        self.owned.lapsed(run_id, run, seq)
        run.last_seq = max(run.last_seq, seq)
        self.enqueue(("event", run_id, (seq, payload)))

    def update(self, run_id: str, status: RunStatus, terminal: bool) -> None:
        """Queue the run's latest status for other instances (a terminal one goes with :meth:`settle`)."""
        run = self.owned.get(run_id)
        if run is None or terminal:
            return
        run.status = status_text.encode(status)
        self.enqueue(("status", run_id, (run.status,)))

    async def settle(self, run_id: str, end: RunEnd) -> RunStatus | None:
        """Commit the run's terminal event and final status, if this instance still owns the run.

        Waits while Redis is away (the end is committed once it is back).

        :returns: None when committed; the status the run ended with elsewhere otherwise.
        """
        return await self.owned.settle(run_id, end)

    def enqueue(self, item: Item) -> None:
        self._queue.append(item)
        self._kick()

    def _kick(self) -> None:
        self._idle.clear()
        self._wake.set()

    async def flush(self) -> None:
        """Wait until everything queued so far was sent (or set aside until its run is claimed again)."""
        while self._queue or not self._idle.is_set():
            self._kick()
            await self._idle.wait()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                writes = self.owned.writes(batch)
                try:
                    await self._send(writes)
                    self._write_outage.succeeded()
                except Exception as exc:
                    # The server is away: keep the batch (in order) and try again, so readers
                    # elsewhere get every event once it is back; past a bound, drop the oldest.
                    self._write_outage.failed(exc)
                    for write in reversed(writes):
                        self._queue.extendleft(reversed(write.items))
                    while len(self._queue) > MAX_QUEUED:
                        self._queue.popleft()
                        self.dropped += 1
                    await asyncio.sleep(RETRY_S)
            self._idle.set()

    async def _send(self, writes: list[Write]) -> None:
        if not writes:
            return
        results = await self._owner_writes(writes)
        if any(_no_script(r) for r in results):
            # Redis lost its script cache (a restart): nothing of the batch ran; load, send again.
            await self.client.script_load(scripts.OWNER_WRITE)
            results = await self._owner_writes(writes)
        for write, result in zip(writes, results, strict=True):
            if isinstance(result, Exception):
                self.dropped += len(write.events)
                log.warning("run bus write for %s refused: %s", write.run_id, result)
                continue
            self.owned.written(write, result)

    async def _owner_writes(self, writes: list[Write]) -> list[Any]:
        """Run one fenced write per run (the script by its digest), pipelined."""
        pipe = self.client.pipeline(transaction=False)
        for write in writes:
            run_id = write.run_id
            pipe.evalsha(
                OWNER_WRITE_SHA,
                3,
                keys.run_record(run_id),
                keys.run_stream(run_id),
                keys.open_runs(self.instance_id),
                *write.args(self),
            )
        results: list[Any] = await pipe.execute(raise_on_error=False)
        return results

    # -- reading (any instance) ----------------------------------------------------------------
    async def lookup(self, run_id: str) -> BusRun | None:
        """Return the run's shared record: ``owner``, ``principal``, ``session_id``, ``status``,
        ``alive`` (the owner still heartbeats); None for an unknown run."""
        record = await self.client.hgetall(keys.run_record(run_id))
        if not record or "owner" not in record:
            return None
        owner = record["owner"]
        alive = bool(owner) and bool(await self.client.exists(keys.alive(owner)))
        return BusRun(
            owner=owner,
            principal=record.get("principal", ""),
            session_id=record.get("session_id", ""),
            status=status_text.decode(record.get("status")),
            alive=alive,
        )

    async def bounds(self, run_id: str) -> tuple[int, int] | None:
        """Return the first and last seq the run's stream holds; None when it holds nothing."""
        stream = keys.run_stream(run_id)
        first = await self.client.xrange(stream, count=1)
        if not first:
            return None
        last = await self.client.xrevrange(stream, count=1)
        return _seq(first[0][0]), _seq(last[0][0])

    async def read(self, run_id: str, after: int, block_s: float) -> list[BusEvent]:
        """Return events with ``seq > after`` (their JSON text as published), waiting up to
        ``block_s`` for the first one."""
        found = await self.client.xread(
            {keys.run_stream(run_id): f"{after}-0"}, count=BATCH, block=max(1, int(block_s * 1000))
        )
        out: list[BusEvent] = []
        for _, entries in found or ():
            for entry_id, fields in entries:
                out.append(BusEvent(_seq(entry_id), fields.get("d", "{}"), fields.get("t") == "1"))
        return out

    # -- control -------------------------------------------------------------------------------
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
        """Deliver a command to the owning instance and return its answer; ``traceparent`` goes
        in the command's envelope (a field of its own beside ``args``).

        :returns: the owner's answer, or ``{"error": "owner_lost"}`` when the owner no longer
            heartbeats, or ``{"error": "owner_timeout"}`` when it did not answer in time.
        """
        return await self.control.send(owner, command, run_id, args, timeout_s, traceparent=traceparent)

    async def reap(self, run_id: str, principal: str | None = None, status: RunStatus | None = None) -> bool:
        """End the run if its owner is gone for sure, with the end the owner side decides
        (``hermes_core.RunOwner.owner_gone``: the API server's ``run.failed``, ``owner_lost``).

        :returns: True when the run is (now) ended on the bus.
        """
        return await self.control.reap_run(run_id, principal, status)

    def token(self) -> str:
        return secrets.token_hex(8)


def _seq(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


def _no_script(result: Any) -> bool:
    import redis.exceptions

    return isinstance(result, redis.exceptions.NoScriptError)


OWNER_WRITE_SHA = hashlib.sha1(scripts.OWNER_WRITE.encode("utf-8")).hexdigest()


__all__ = ["Owned", "RedisRunBus"]
