"""The records ledger on SQLite (docs/reference/budgets.md#where-the-buckets-live): each operation
reads, checks and writes all its buckets in one transaction of the shared file, so instances on
one file never pass a cap, a refusal writes nothing anywhere, and a dead instance's reservations
still expire."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from hermes_core.budget_ledger import BucketLimits, LedgerCall
from hermes_core.budget_records import NAMESPACE, RecordsLedger
from hermes_core.kernel import Kernel


def sqlite_kernel(db: Path) -> Kernel:
    return Kernel.create(
        entry_points=["mock", "sqlite"],
        strict=True,
        settings={"model": "mock:echo", "storage": {"backend": "sqlite", "path": str(db)}},
    )


@asynccontextmanager
async def instances(db: Path, count: int) -> AsyncIterator[list[Kernel]]:
    """``count`` kernels on the same database file (each with its own connection and thread)."""
    async with AsyncExitStack() as stack:
        kernels = [sqlite_kernel(db) for _ in range(count)]
        for kernel in kernels:
            await stack.enter_async_context(kernel.running())
        yield kernels


LIMITS = [BucketLimits("key:k", spend_usd=1.0), BucketLimits("tenant:t", tokens_per_minute=1_000)]


async def test_instances_sharing_the_file_never_pass_the_cap(tmp_path: Path) -> None:
    async with instances(tmp_path / "h.sqlite3", 2) as (first, second):
        ledgers = [RecordsLedger(k.records.space(NAMESPACE)) for k in (first, second)]

        async def one(n: int) -> bool:
            call = LedgerCall("reserve", f"r{n}", f"v{n}", 0.1, 10)
            return (await ledgers[n % 2].apply(LIMITS, call)).ok

        admitted = await asyncio.gather(*(one(n) for n in range(40)))
        assert sum(admitted) == 10  # $1 of $0.10 reservations, whichever instance made them
        key, tenant = await ledgers[1].read("key:k"), await ledgers[0].read("tenant:t")
    assert len(key["res"]) == 10 and len(tenant["res"]) == 10  # refusals left nothing behind


async def test_a_refused_reservation_writes_no_bucket(tmp_path: Path) -> None:
    async with instances(tmp_path / "h.sqlite3", 1) as (kernel,):
        ledger = RecordsLedger(kernel.records.space(NAMESPACE))
        assert (await ledger.apply(LIMITS, LedgerCall("reserve", "r1", "v1", 0.1, 900))).ok
        space = kernel.records.space(NAMESPACE)
        before = await space.get("key:k")
        refused = await ledger.apply(LIMITS, LedgerCall("reserve", "r2", "v2", 0.1, 200))
        assert not refused.ok and refused.bucket == "tenant:t"
        after = await space.get("key:k")
    # The key bucket, which had room, was never charged and taken back: other instances could
    # have been refused by that passing charge.
    assert before is not None and after is not None and after.version == before.version
    assert list(after.value["res"]) == ["v1"]


async def test_a_dead_instances_reservations_expire(tmp_path: Path) -> None:
    now = [1000.0]
    db = tmp_path / "h.sqlite3"
    async with instances(db, 1) as (gone,):
        ledger = RecordsLedger(gone.records.space(NAMESPACE), clock=lambda: now[0])
        assert (await ledger.apply(LIMITS, LedgerCall("reserve", "r1", "v1", 0.9, 10, ttl_s=30))).ok
    # That instance stopped without settling; another one on the file finds the room held ...
    async with instances(db, 1) as (kernel,):
        ledger = RecordsLedger(kernel.records.space(NAMESPACE), clock=lambda: now[0])
        held: Any = await ledger.apply(LIMITS, LedgerCall("reserve", "r2", "v2", 0.9, 10, ttl_s=30))
        assert not held.ok and held.limit == "spend_usd"
        now[0] += 31  # ... until the reservation's time is up
        assert (await ledger.apply(LIMITS, LedgerCall("reserve", "r2", "v2", 0.9, 10, ttl_s=30))).ok
