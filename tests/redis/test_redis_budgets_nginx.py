"""Budgets across three ``hermes api`` instances behind nginx, on PostgreSQL and one Redis
(docs/reference/budgets.md): every instance calls the ``openai`` provider on a fake upstream with
known usage.

- 50 concurrent runs under a $1 key cap: the settled spend stays under the cap (the ledger and
  the runs' own usage agree), every refusal is a 429 ``budget_exceeded`` with ``Retry-After`` or
  a run that ended ``budget_exceeded`` before its call, and every call carried the output limit
  its reservation was made for;
- a key limited to one concurrent run: while its run streams on one instance a second is
  refused; after ``kill -9`` of that instance the reservation and the slot expire, the next
  run is admitted elsewhere, and the dead run's reservation was never charged;
- 100 requests per minute across the three instances admit at most 100.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.api_helpers import Server, start_server
from tests.budget_world import (
    CALL_USD,
    MAX_OUT,
    PricedUpstream,
    assert_refusal,
    budget_config,
    fill_up,
    post_run,
    principal,
    settled,
    spend_burst,
)
from tests.providers.upstream_fakes import FakeUpstream
from tests.redis.conftest import Shared
from tests.redis.test_redis_nginx import Front, listening
from tests.timing import eventually, scaled

SPEND = "hk_" + secrets.token_urlsafe(32)
ONE_AT_A_TIME = "hk_" + secrets.token_urlsafe(32)
RPM = "hk_" + secrets.token_urlsafe(32)
TTL_S = scaled(4)
BUS = """
[bus]
backend = "redis"
heartbeat_s = 0.5
owner_grace_s = 3
"""


class Cluster:
    def __init__(self, front: Front, backends: list[Server], upstream: PricedUpstream, url: str) -> None:
        self.front, self.backends, self.upstream, self.redis_url = front, backends, upstream, url

    async def bucket(self, name: str) -> dict[str, Any]:
        import redis.asyncio as aioredis

        client = aioredis.from_url(self.redis_url, decode_responses=True)
        try:
            raw = await client.get(f"hermes:budget:{name}")
        finally:
            await client.aclose()
        found: dict[str, Any] = json.loads(raw) if raw else {}
        return found


@pytest.fixture
async def cluster(tmp_path: Path, shared: Shared) -> AsyncIterator[Cluster]:
    async with FakeUpstream() as up:
        upstream = PricedUpstream(up)
        keys = {
            SPEND: "spend_usd = 1.0",
            ONE_AT_A_TIME: "concurrent_runs = 1",
            RPM: "requests_per_minute = 100",
        }
        config = budget_config(up.url, keys, TTL_S) + shared.config + BUS
        env = dict(shared.env)
        backends = [start_server(tmp_path / f"i{i}", config=config, env=env) for i in range(3)]
        front = Front(tmp_path / "nginx", backends)
        front.key = SPEND
        try:
            await listening(front)
            yield Cluster(front, backends, upstream, shared.url)
        finally:
            upstream.release.set()
            front.stop()
            for b in backends:
                b.stop()


async def test_fifty_concurrent_runs_stay_under_a_one_dollar_cap(cluster: Cluster) -> None:
    spent, completed, refused = await spend_burst([cluster.front], SPEND, 50, 1.0)
    assert completed >= 5 and refused >= 20  # concurrent demand was twice the cap
    ledger = await cluster.bucket(f"key:{principal(SPEND)}")
    assert ledger["spent"] == pytest.approx(spent, abs=1e-9)  # settled from the reported usage
    assert spent <= 1.0 + 1e-9
    assert ledger["res"] == {} and ledger["runs"] == {}  # nothing held once every run ended
    # One run at a time uses what headroom the burst left, until one never reaches the model.
    spent += await fill_up(cluster.front, SPEND, cluster.upstream)
    ledger = await cluster.bucket(f"key:{principal(SPEND)}")
    assert ledger["spent"] == pytest.approx(spent, abs=1e-9) and spent <= 1.0 + 1e-9
    # The cap was reached, not dodged: what is left is less than one call's reservation.
    assert spent > 1.0 - 0.11
    assert cluster.upstream.max_tokens and set(cluster.upstream.max_tokens) == {MAX_OUT}


async def test_a_killed_instance_releases_its_reservation_and_slot(cluster: Cluster) -> None:
    victim, other = cluster.backends[0], cluster.backends[1]
    status, body, _ = await post_run(victim, ONE_AT_A_TIME, "slow please")
    assert status == 202, body
    await asyncio.wait_for(cluster.upstream.slow_started.wait(), scaled(30))
    name = f"key:{principal(ONE_AT_A_TIME)}"
    held = await cluster.bucket(name)
    assert len(held["res"]) == 1 and len(held["runs"]) == 1  # its call is reserved, its slot taken
    status, body, headers = await post_run(cluster.front, ONE_AT_A_TIME, "second")
    assert_refusal(status, body, headers, "concurrent_runs")

    os.kill(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait(10)

    async def admitted() -> str | None:
        status, body, _ = await post_run(other, ONE_AT_A_TIME, "after the kill")
        return str(body["run_id"]) if status == 202 else None

    run_id = await eventually(admitted, timeout=TTL_S + scaled(20), interval=0.5, what="slot expired")
    end = await settled(other, ONE_AT_A_TIME, run_id)
    assert end["status"] == "completed", end
    ledger = await cluster.bucket(name)
    # Only the run that finished was charged; the dead run's reservation expired unpaid.
    assert ledger["spent"] == pytest.approx(CALL_USD)


async def test_a_hundred_requests_per_minute_across_three_instances(cluster: Cluster) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(cluster.redis_url)
    try:

        async def early_in_a_minute() -> bool:
            seconds, _ = await client.time()
            return int(seconds) % 60 < 25

        # The burst must fall in one minute of the ledger's clock to be counted against one window.
        await eventually(early_in_a_minute, timeout=70, interval=0.5, what="the start of a minute")
        start, _ = await client.time()
        replies = await asyncio.gather(*(post_run(cluster.front, RPM, f"r {i}") for i in range(130)))
        end, _ = await client.time()
    finally:
        await client.aclose()
    assert int(start) // 60 == int(end) // 60, "the burst straddled a minute; the machine is too slow"
    admitted = [body["run_id"] for status, body, _ in replies if status == 202]
    for status, body, headers in replies:
        if status != 202:
            assert_refusal(status, body, headers, "requests_per_minute")
    assert 90 <= len(admitted) <= 100
    await asyncio.gather(*(settled(cluster.front, RPM, r) for r in admitted[:5]))
