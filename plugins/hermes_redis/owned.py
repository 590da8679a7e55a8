"""The runs this instance owns on the bus: what it claimed, the seqs it reserved, the writes it
still has to send, and how it learns that a run was ended elsewhere.

Every write of an owned run carries the run's owner and epoch and is refused once another
instance ended the run (``scripts.OWNER_WRITE``); the owner then stops the run (``RunOwner.lost``)
and takes that ending as its own. The seqs an owner may show its own readers before they reach
Redis are reserved ahead, ``RESERVE`` at a time, in the record: a reaper numbers its terminal
event after them. A write that finds the record gone (Redis restarted empty) is set aside until
the run is claimed again, which happens only after the durable records were asked whether the run
ended elsewhere meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_redis import keys, status_text

if TYPE_CHECKING:
    from hermes_core import RunEnd, RunOwner, RunStatus
    from hermes_redis.bus import RedisRunBus

log = logging.getLogger("hermes.redis")
#: (kind, run id, arguments): ``claim`` (), ``event`` (seq, payload text), ``status`` (record
#: text), ``end`` (seq, payload text, record text). Payloads are never parsed here.
Item = tuple[str, str, tuple[Any, ...]]
#: How many seqs past the last one published an owner reserves (and may show at once).
RESERVE = 128


@dataclass(eq=False)
class Owned:
    """One run this instance owns."""

    principal: str
    session_id: str
    status: str
    epoch: str = "1"
    #: The record is known to exist (a claim or a write was accepted).
    claimed: bool = False
    last_seq: int = 0
    reserve_sent: int = 0
    reserve_ok: int = 0
    #: Writes waiting for the run to be claimed again (Redis lost its record).
    parked: list[Item] = field(default_factory=list)
    ending: asyncio.Future[RunStatus | None] | None = None
    #: Its events are held from this process's readers (the liveness lease lapsed).
    held: bool = False
    #: The record text of the final status this instance asked to commit (its own end, if the
    #: record holds exactly this).
    end_status: str | None = None


@dataclass(eq=False)
class Write:
    """One run's share of a batch: one script call."""

    run_id: str
    owned: Owned
    items: list[Item]
    create: bool
    events: list[tuple[int, str]]
    status: str | None
    end: bool
    reserve: int | None

    def args(self, bus: RedisRunBus) -> list[str]:
        """Return the script's ARGV (see ``scripts.OWNER_WRITE``)."""
        run = self.owned
        argv = [
            bus.instance_id,
            run.epoch,
            "1" if self.create else "",
            run.principal,
            run.session_id,
            str(self.reserve) if self.reserve else "",
            self.status or "",
            "1" if self.end else "",
            str(bus.retention_s),
            str(bus.journal_events),
            str(bus.retention_s * 24),
            self.run_id,
        ]
        for seq, data in self.events:
            argv += [str(seq), data]
        return argv


def same_end(recorded: str | None, ours: str | None) -> bool:
    """Tell whether the record's final status is the one this instance asked to commit (its own
    end, committed by an earlier attempt whose answer was lost); compared as text."""
    return ours is not None and recorded == ours


class OwnedRuns:
    """The owner's side of the bus."""

    def __init__(self, bus: RedisRunBus) -> None:
        self.bus = bus
        self.runs: dict[str, Owned] = {}
        #: Runs ended elsewhere that nobody asked to settle yet: how they ended.
        self.elsewhere: dict[str, RunStatus] = {}
        self.owner: RunOwner | None = None
        #: Redis lost this instance's records: announce the runs again (after asking the owner).
        self.records_lost = False
        #: Until when (monotonic) this instance may show its runs' events (``renew``).
        self.lease_until = 0.0
        self._announcing: asyncio.Task[None] | None = None

    def get(self, run_id: str) -> Owned | None:
        return self.runs.get(run_id)

    def add(self, run_id: str, principal: str, session_id: str, status: str) -> None:
        run = self.runs.get(run_id)
        if run is None:
            self.runs[run_id] = Owned(principal, session_id, status)
        else:
            run.status = status

    # -- batches -------------------------------------------------------------------------------
    def writes(self, batch: list[Item]) -> list[Write]:
        """Group a batch by run, in order, into one write each (parked writes included)."""
        grouped: dict[str, list[Item]] = {}
        for item in batch:
            if item[1] in self.runs:  # else ended (here or elsewhere): nothing more to send
                grouped.setdefault(item[1], []).append(item)
        out = []
        for run_id, items in grouped.items():
            run = self.runs[run_id]
            claims = [i for i in items if i[0] == "claim"]
            if run.parked:
                if not claims:
                    run.parked.extend(items)  # keep the order: after the set-aside ones
                    continue
                items = claims + run.parked + [i for i in items if i[0] != "claim"]
                run.parked = []
            out.append(self._write(run_id, run, items, bool(claims)))
        return out

    def _write(self, run_id: str, run: Owned, items: list[Item], create: bool) -> Write:
        events: list[tuple[int, str]] = []
        status: str | None = None
        end = False
        for kind, _, args in items:
            if kind == "event":
                events.append((args[0], args[1]))
            elif kind == "status":
                status = args[0]
            elif kind == "end":
                events.append((args[0], args[1]))
                status, end = args[2], True
        if create and status is None:
            status = run.status
        top = max([run.last_seq, *(seq for seq, _ in events)])
        reserve = None
        if not end and (create or top + RESERVE // 2 > run.reserve_sent):
            run.reserve_sent = max(run.reserve_sent, top + RESERVE)
            reserve = run.reserve_sent
        return Write(run_id, run, items, create, events, status, end, reserve)

    def written(self, write: Write, result: Any) -> None:
        """Apply a write's answer: reservation confirmed, run ended, record gone or fenced."""
        run_id, run = write.run_id, write.owned
        if self.runs.get(run_id) is not run:
            return  # ended meanwhile (the heartbeat found it fenced)
        kind = result[0] if isinstance(result, list | tuple) and result else result
        if kind == "ok":
            run.claimed = True
            if write.end:
                self._finish(run_id, run, None)
            elif write.reserve is not None and write.reserve > run.reserve_ok:
                run.reserve_ok = write.reserve
                if self.owner is not None:
                    self.owner.shown(run_id, run.reserve_ok)
        elif kind == "missing":
            # Redis lost the record (restarted empty): set the writes aside until the run is
            # claimed again; the claim waits for the owner to confirm the run is still its own.
            run.claimed = False
            run.parked = [i for i in write.items if i[0] != "claim"] + run.parked
            self.lost()
        elif kind == "fenced":
            recorded = result[1] if len(result) > 1 else None
            if write.end and same_end(recorded, run.end_status):
                self._finish(run_id, run, None)  # committed by an attempt whose answer was lost
            else:
                self.fence(run_id, status_text.decode(recorded))
        else:
            log.warning("run bus write for %s got an unexpected answer: %r", run_id, result)

    def _finish(self, run_id: str, run: Owned, outcome: RunStatus | None) -> None:
        self.runs.pop(run_id, None)
        if run.ending is not None and not run.ending.done():
            run.ending.set_result(outcome)

    def fence(self, run_id: str, status: RunStatus) -> None:
        """The run was ended elsewhere: stop writing it and tell the owner how it ended."""
        run = self.runs.pop(run_id, None)
        if run is None:
            return
        log.warning(
            "run %s was ended by another instance (%s) while this one ran it; stopping it here",
            run_id,
            status.error_code or status.status,
        )
        if run.ending is not None and not run.ending.done():
            run.ending.set_result(status)
        else:
            self.elsewhere[run_id] = status
        if self.owner is not None:
            # Nothing published from now on is this run's: its end is numbered after what this
            # instance showed before its lease lapsed (a hold already made stays).
            self.owner.hold(run_id, run.last_seq)
            self.owner.lost(run_id, status)

    async def owner_gone(
        self, run_id: str, owner: str, last_seq: int, reserved: int, status: RunStatus
    ) -> RunEnd | None:
        """A run's owner is gone, its stream ends at ``last_seq`` and it may have shown its own
        readers up to ``reserved``: return the terminal event (numbered in ``last_seq + 1 ..
        reserved + 1``) and final status the owner side decides for it (``RunOwner.owner_gone``),
        which the bus then commits; None without an owner side (the bus alone never writes an
        event)."""
        if self.owner is None:
            return None
        from hermes_core import OwnerGone

        gone = OwnerGone(run_id, owner, last_seq, max(last_seq, reserved))
        end = await self.owner.owner_gone(gone, status)
        seq = end.seq
        if not last_seq < seq <= reserved + 1:
            log.warning(
                "run %s: an end numbered %s is outside %s..%s; not committed",
                run_id,
                seq,
                last_seq + 1,
                reserved + 1,
            )
            return None
        return end

    # -- the liveness lease --------------------------------------------------------------------
    def renew(self, until: float) -> None:
        """The heartbeat went through and the runs' records were checked: this instance may
        show its runs' events to its own readers until ``until`` (monotonic); runs held since
        the lease lapsed are shown again."""
        self.lease_until = until
        if self.owner is None:
            return
        for run_id, run in self.runs.items():
            if run.held and run.claimed:
                run.held = False
                self.owner.release(run_id)

    def lapsed(self, run_id: str, run: Owned, seq: int) -> None:
        """Before event ``seq`` of an owned run is shown here: once the lease lapsed, hold the
        run's events from ``seq`` on (a reaper may number its end after the ones before)."""
        if run.held or time.monotonic() <= self.lease_until:
            return
        run.held = True
        if self.owner is not None:
            self.owner.hold(run_id, seq - 1)

    def reaped(self, run_id: str, principal: str, status: RunStatus) -> None:
        """This instance ended another instance's run (``owner_lost``): have the owner side store
        that end durably at once. Redis may forget it (a restart without persistence) before the
        run's owner learns it was fenced; the owner then finds it in the durable records before it
        claims the run again (``RunOwner.ended_elsewhere``)."""
        if self.owner is not None:
            self.owner.reaped(run_id, principal, status)

    async def settle(self, run_id: str, end: RunEnd) -> RunStatus | None:
        """Queue the run's end and wait for the bus's answer (see ``RedisRunBus.settle``)."""
        if run_id in self.elsewhere:
            return self.elsewhere.pop(run_id)
        run = self.runs.get(run_id)
        if run is None:
            return None  # never claimed here: there is nothing it could be fenced by
        run.ending = asyncio.get_running_loop().create_future()
        run.end_status = status_text.encode(end.status)
        self.bus.enqueue(("end", run_id, (end.seq, end.payload, run.end_status)))
        return await run.ending

    # -- after Redis lost the records ----------------------------------------------------------
    def lost(self) -> None:
        """Note that Redis lost this instance's records; announce the runs again soon."""
        self.records_lost = True
        if self._announcing is None or self._announcing.done():
            self._announcing = asyncio.create_task(self._announce(), name="hermes-redis-announce")
            self._announcing.add_done_callback(_retrieve)

    async def announce_if_lost(self) -> None:
        """At each heartbeat: announce again if Redis lost the records and that is not done yet."""
        if self.records_lost and (self._announcing is None or self._announcing.done()):
            self._announcing = asyncio.create_task(self._announce(), name="hermes-redis-announce")
            self._announcing.add_done_callback(_retrieve)

    async def _announce(self) -> None:
        """Make the control group again, ask the owner which runs ended elsewhere meanwhile (the
        durable records), and claim the others again."""
        await self.bus.control.create_group()
        candidates = list(self.runs)
        ended: dict[str, RunStatus] = {}
        if candidates and self.owner is not None:
            ended = await self.owner.ended_elsewhere(candidates)
        for run_id, status in ended.items():
            self.fence(run_id, status)
        again = [run_id for run_id in candidates if run_id in self.runs]
        for run_id in again:
            self.bus.enqueue(("claim", run_id, ()))
        self.records_lost = False
        log.warning(
            "the run bus lost its records (a Redis restart?); announced %d open run(s) again", len(again)
        )

    async def check(self) -> None:
        """At each heartbeat: find the runs ended elsewhere while nothing of theirs was written
        (a run waiting for an approval), and records Redis lost."""
        claimed = [(run_id, run) for run_id, run in self.runs.items() if run.claimed]
        if not claimed:
            return
        pipe = self.bus.client.pipeline(transaction=False)
        for run_id, _ in claimed:
            pipe.hmget(keys.run_record(run_id), "owner", "epoch", "ended", "status")
        rows = await pipe.execute()
        for (run_id, run), (owner, epoch, ended, status) in zip(claimed, rows, strict=True):
            if self.runs.get(run_id) is not run:
                continue
            if owner is None:
                run.claimed = False
                self.lost()
            elif owner != self.bus.instance_id or epoch != run.epoch or ended == "1":
                if not same_end(status, run.end_status):  # else our own end, answer on its way
                    self.fence(run_id, status_text.decode(status))

    async def stop(self) -> None:
        task = self._announcing
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def _retrieve(task: asyncio.Task[None]) -> None:
    """Log a failed announcement (the next heartbeat tries again)."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("announcing this instance's runs again failed: %s", task.exception())
