"""The Redis budget ledger (docs/reference/budgets.md): one Lua script over every bucket, so
concurrent reservations never pass a cap and a refusal changes nothing; an unreachable Redis
refuses (budgets fail closed), through a real kernel's turn too."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import BucketLimits, BudgetUnavailable, LedgerCall
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel
from hermes_redis import plugin as redis_plugin
from hermes_redis.ledger import RedisLedger
from tests.redis.conftest import free_port


async def test_fifty_concurrent_reservations_admit_exactly_what_fits(redis_dsn: str) -> None:
    ledger = RedisLedger(redis_dsn)
    try:
        limits = [BucketLimits("key:k", spend_usd=1.0), BucketLimits("tenant:t", spend_usd=0.55)]

        async def one(n: int) -> bool:
            return (await ledger.apply(limits, LedgerCall("reserve", "r", f"v{n}", 0.1, 10))).ok

        admitted = await asyncio.gather(*(one(n) for n in range(50)))
        assert sum(admitted) == 5  # the tenant's cap binds; the key's bucket holds the same five
        key, tenant = await ledger.read("key:k"), await ledger.read("tenant:t")
        assert len(key["res"]) == 5 and len(tenant["res"]) == 5
        # Settling one from its usage frees the rest of its reservation.
        first = next(iter(key["res"]))
        assert (await ledger.apply(limits, LedgerCall("settle", "r", first, 0.02, 3))).ok
        assert (await ledger.apply(limits, LedgerCall("reserve", "r", "again", 0.05, 10))).ok
        refused = await ledger.apply(limits, LedgerCall("reserve", "r", "over", 0.1, 10))
        assert not refused.ok and refused.bucket == "tenant:t" and refused.limit == "spend_usd"
        assert refused.retry_after >= 1
        assert (await ledger.read("tenant:t"))["spent"] == pytest.approx(0.02)
    finally:
        await ledger.aclose()


async def _used_up_or_not(ledger: Any) -> None:
    spend = [BucketLimits("key:cap", spend_usd=1.0)]
    big = await ledger.apply(spend, LedgerCall("reserve", "r", "big", 5.0, 10, 60))
    assert not big.ok and big.limit == "spend_usd" and not big.exhausted
    assert (await ledger.apply(spend, LedgerCall("reserve", "r", "v1", 1.0, 10, 60))).ok
    assert (await ledger.apply(spend, LedgerCall("settle", "r", "v1", 1.0, 10))).ok
    after = await ledger.apply(spend, LedgerCall("reserve", "r", "small", 0.01, 1, 60))
    assert not after.ok and after.limit == "spend_usd" and after.exhausted
    if time.time() % 60 > 50:  # the minute's tokens start again at the next minute: not mid-check
        await asyncio.sleep(61 - time.time() % 60)
    tokens = [BucketLimits("key:tpm", tokens_per_minute=100)]
    wide = await ledger.apply(tokens, LedgerCall("reserve", "r", "wide", 0.0, 500, 60))
    assert not wide.ok and wide.limit == "tokens_per_minute" and not wide.exhausted
    assert (await ledger.apply(tokens, LedgerCall("reserve", "r", "t1", 0.0, 100, 60))).ok
    assert (await ledger.apply(tokens, LedgerCall("settle", "r", "t1", 0.0, 100))).ok
    full = await ledger.apply(tokens, LedgerCall("reserve", "r", "t2", 0.0, 1, 60))
    assert not full.ok and full.limit == "tokens_per_minute" and full.exhausted


async def test_a_refusal_says_whether_the_bucket_is_used_up_for_every_call(
    redis_dsn: str, tmp_path: Path
) -> None:
    # One call too big for the room left is refused without the bucket being used up (a smaller
    # one still fits); once the settled spend or the minute's tokens reach the limit, it is.
    # The Lua script and the records ledger answer alike.
    ledger = RedisLedger(redis_dsn)
    try:
        await _used_up_or_not(ledger)
    finally:
        await ledger.aclose()
    kernel = make_kernel(
        FakeProviderPlugin(FakeProvider()), settings={"model": "fake:model", "data_dir": str(tmp_path)}
    )
    async with kernel.running():
        await _used_up_or_not(kernel.budgets.ledger())


async def test_requests_per_minute_and_slots(redis_dsn: str) -> None:
    ledger = RedisLedger(redis_dsn)
    try:
        limits = [BucketLimits("key:rpm", requests_per_minute=3, concurrent_runs=2)]
        a = await ledger.apply(limits, LedgerCall("admit", "a", ttl_s=30))
        b = await ledger.apply(limits, LedgerCall("admit", "b", ttl_s=30))
        c = await ledger.apply(limits, LedgerCall("admit", "c", ttl_s=30))
        assert (a.ok, b.ok, c.ok) == (True, True, False) and c.limit == "concurrent_runs"
        assert (await ledger.apply(limits, LedgerCall("release", "a"))).ok
        d = await ledger.apply(limits, LedgerCall("admit", "d", ttl_s=30))
        e = await ledger.apply(limits, LedgerCall("admit", "e", ttl_s=30))
        assert d.ok and not e.ok and e.limit in ("requests_per_minute", "concurrent_runs")
    finally:
        await ledger.aclose()


async def test_an_unreachable_redis_refuses() -> None:
    ledger = RedisLedger(f"redis://127.0.0.1:{free_port()}/0")
    try:
        with pytest.raises(BudgetUnavailable, match="does not answer"):
            await ledger.apply([BucketLimits("key:k", spend_usd=1.0)], LedgerCall("admit", "r", ttl_s=5))
    finally:
        await ledger.aclose()


async def test_a_turn_fails_closed_when_the_redis_bus_is_down(tmp_path: Path) -> None:
    provider = FakeProvider()
    kernel = make_kernel(
        FakeProviderPlugin(provider),
        redis_plugin,
        settings={
            "model": "fake:model",
            "bus": {"backend": "redis", "url": f"redis://127.0.0.1:{free_port()}/0"},
            "budgets": {"key": {"spend_usd": 5.0}, "prices": {"*": {"input": 1.0, "output": 1.0}}},
        },
    )
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=tmp_path)
        outcome = await (await session.submit("hi", owner="t")).outcome
    assert outcome.reason == "budget_exceeded"
    assert "does not answer" in (outcome.message or "")
    assert provider.requests == []  # no model call without a working ledger
