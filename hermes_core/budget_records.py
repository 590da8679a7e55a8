"""The budget ledger kept in the kernel's records (docs/reference/budgets.md#where-the-buckets-live).

One record per bucket in the ``budgets`` namespace; every change is a compare-and-set on the
record's version (an insert is a claim let go at once), so instances sharing a PostgreSQL
database never lose each other's charges. An operation on several buckets applies them one after
another and takes back what it did when a later bucket refuses: a refusal never leaves a charge
behind, and two racing requests may both be refused where one would have fitted (never both
admitted where one fits). Within one process the changes of a bucket take turns (a lock per
bucket), so compare-and-set retries only happen between instances.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.budget_ledger import OK, BucketLimits, LedgerCall, Verdict, change, check, undo
from hermes_core.errors import BudgetUnavailable, StorageError
from hermes_core.record_store import Expect

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

    async def apply(self, buckets: Sequence[BucketLimits], call: LedgerCall) -> Verdict:
        """Apply ``call`` to each bucket in turn; on a refusal undo the ones done."""
        done: list[BucketLimits] = []
        try:
            for limits in buckets:
                verdict = await self._one(limits, call)
                if not verdict.ok:
                    for earlier in reversed(done):
                        await self._change(earlier.key, lambda s: undo(s, call, self._clock()))
                    return verdict
                done.append(limits)
        except StorageError as exc:
            raise BudgetUnavailable(f"the budget records cannot be reached: {exc}") from exc
        return OK

    async def _one(self, limits: BucketLimits, call: LedgerCall) -> Verdict:
        refused: list[Verdict] = []

        def step(state: dict[str, Any]) -> bool:
            now = self._clock()
            verdict = check(state, limits, call, now)
            if not verdict.ok:
                refused.append(verdict)
                return False
            change(state, call, now)
            return True

        await self._change(limits.key, step)
        return refused[0] if refused else OK

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
        for _ in range(_TRIES):
            record = await self._space.get(key)
            state: dict[str, Any] = dict(record.value) if record is not None else {}
            if step(state) is False:
                return
            if record is None:
                claim = await self._space.claim(key, state, owner="budgets")
                if claim.won:
                    await self._space.release(key, expect=Expect(owner="budgets", epoch=claim.record.epoch))
                    return
                continue
            if await self._space.put(key, state, expect=Expect(version=record.version)) is not None:
                return
        raise BudgetUnavailable(f"the budget bucket {key} kept changing under {_TRIES} writes")

    async def read(self, bucket: str) -> dict[str, Any]:
        """Return the bucket's stored state (``{}`` when never charged)."""
        record = await self._space.get(bucket)
        return dict(record.value) if record is not None else {}

    async def aclose(self) -> None:
        """Nothing to close: the storage backend is the kernel's."""
