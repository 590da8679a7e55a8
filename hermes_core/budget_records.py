"""The budget ledger kept in the kernel's records (docs/reference/budgets.md#where-the-buckets-live).

One record per bucket in the ``budgets`` namespace. Where the backend changes several records in
one transaction (:class:`~hermes_core.record_store.RecordUpdates`: SQLite, memory), an operation
reads, checks and writes all its buckets in that one step: all or nothing, one round trip, and
no other process sharing the database writes them in between.

Elsewhere (PostgreSQL) every change is a compare-and-set on the record's version (an insert is a
claim let go at once), so instances sharing the database never lose each other's charges. An
operation on several buckets applies them one after another and takes back what it did when a
later bucket refuses: a refusal never leaves a charge behind, and two racing requests may both be
refused where one would have fitted (never both admitted where one fits). Within one process the
changes of a bucket take turns (a lock per bucket), so compare-and-set retries only happen
between instances.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.budget_ledger import (
    OK,
    BucketLimits,
    LedgerCall,
    Verdict,
    change,
    check,
    counts_runs,
    undo,
)
from hermes_core.errors import BudgetUnavailable, StorageError
from hermes_core.record_store import Expect, StoredRecord

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes_core.record_space import RecordSpace

NAMESPACE = "budgets"
_TRIES = 64
_KEPT_LOCKS = 4096


class RecordsLedger:
    """Buckets as records of one namespace.

    :param space: the ``budgets`` record space. :param clock: seconds since the epoch.
    """

    name = "records"

    def __init__(self, space: RecordSpace, clock: Callable[[], float] = time.time) -> None:
        self._space = space
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._seen: dict[str, StoredRecord] = {}
        #: Whether the backend changes several records in one transaction (asked once).
        self._at_once: bool | None = None

    async def apply(self, buckets: Sequence[BucketLimits], call: LedgerCall) -> Verdict:
        """Apply ``call`` to every bucket at once; on a refusal undo the ones that took it."""
        try:
            if self._at_once is None:
                self._at_once = self._space.updates
            if self._at_once:
                return await self._apply_at_once(buckets, call)
            verdicts = await asyncio.gather(*(self._one(limits, call) for limits in buckets))
            refused = [v for v in verdicts if not v.ok]
            if refused:
                took = [b for b, v in zip(buckets, verdicts, strict=True) if v.ok]
                await asyncio.gather(
                    *(self._change(b.key, lambda s: undo(s, call, self._clock())) for b in took)
                )
                return refused[0]
        except StorageError as exc:
            raise BudgetUnavailable(f"the budget records cannot be reached: {exc}") from exc
        return OK

    async def _apply_at_once(self, buckets: Sequence[BucketLimits], call: LedgerCall) -> Verdict:
        """Check and change every bucket that ``call`` writes in one transaction of the backend."""
        writes: list[BucketLimits] = []
        for limits in buckets:
            if counts_runs(limits) or call.op in ("reserve", "settle"):
                writes.append(limits)
            elif call.op == "admit":
                # Nothing to write here either: the same look as :meth:`_one`'s.
                verdict = await self._one(limits, call)
                if not verdict.ok:
                    return verdict
        if not writes:
            return OK
        refused: list[Verdict] = []

        def step(values: list[Any]) -> list[Any] | None:
            # Runs inside the backend's transaction (maybe on its thread): only arithmetic.
            now = self._clock()
            states = [dict(value) if isinstance(value, dict) else {} for value in values]
            for limits, state in zip(writes, states, strict=True):
                verdict = check(state, limits, call, now)
                if not verdict.ok:
                    refused.append(verdict)
                    return None
            for state in states:
                change(state, call, now)
            return states

        written = await self._space.update([limits.key for limits in writes], step)
        if written is None:
            return refused[0] if refused else OK
        for record in written:
            self._remember(record.key, record)
        return OK

    async def _one(self, limits: BucketLimits, call: LedgerCall) -> Verdict:
        if not counts_runs(limits):
            # Without a request or slot limit an admission writes nothing: a look at the bucket
            # (the copy this process wrote last, if any) says whether its spend or tokens are
            # gone; a stale look only lets a turn through to its reservation, which is exact.
            if call.op == "release":
                return OK
            if call.op == "admit":
                record = self._seen.get(limits.key) or await self._space.get(limits.key)
                state = dict(record.value) if record is not None else {}
                return check(state, limits, call, self._clock())
        refused: list[Verdict] = []

        def step(state: dict[str, Any]) -> bool:
            refused.clear()  # only the last look counts (a stale copy may refuse, then a fresh one not)
            now = self._clock()
            verdict = check(state, limits, call, now)
            if not verdict.ok:
                refused.append(verdict)
                return False
            change(state, call, now)
            return True

        await self._change(limits.key, step)
        return refused[-1] if refused else OK

    def _lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            if len(self._locks) >= _KEPT_LOCKS:
                self._locks = {k: v for k, v in self._locks.items() if v.locked()}
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def _change(self, key: str, step: Callable[[dict[str, Any]], bool | None]) -> None:
        """Run ``step`` on the bucket's state and write it back if it returned other than False."""
        async with self._lock(key):
            await self._change_now(key, step)

    async def _change_now(self, key: str, step: Callable[[dict[str, Any]], bool | None]) -> None:
        # The record this process wrote last stands in for a read: with one writer the
        # compare-and-set then succeeds at once (one round trip, not two). A stale copy fails
        # the version check, and a refusal is only believed on a fresh read.
        fresh = False
        for _ in range(_TRIES):
            record = None if fresh else self._seen.get(key)
            if record is None:
                record, fresh = await self._space.get(key), True
            state: dict[str, Any] = dict(record.value) if record is not None else {}
            if step(state) is False:
                if fresh:
                    return
                fresh = True
                continue
            if record is None:
                claim = await self._space.claim(key, state, owner="budgets")
                if claim.won:
                    expect = Expect(owner="budgets", epoch=claim.record.epoch)
                    self._remember(key, await self._space.release(key, expect=expect))
                    return
                continue
            written = await self._space.put(key, state, expect=Expect(version=record.version))
            if written is not None:
                self._remember(key, written)
                return
            fresh = True
        raise BudgetUnavailable(f"the budget bucket {key} kept changing under {_TRIES} writes")

    def _remember(self, key: str, record: StoredRecord | None) -> None:
        if len(self._seen) >= _KEPT_LOCKS:
            self._seen.clear()
        if record is None:
            self._seen.pop(key, None)
        else:
            self._seen[key] = record

    async def read(self, bucket: str) -> dict[str, Any]:
        """Return the bucket's stored state (``{}`` when never charged)."""
        record = await self._space.get(bucket)
        return dict(record.value) if record is not None else {}

    async def aclose(self) -> None:
        """Nothing to close: the storage backend is the kernel's."""
