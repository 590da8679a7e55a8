"""Budgets kept in the shared records (no Redis): two ``hermes api`` instances on one PostgreSQL
database (docs/reference/budgets.md#where-the-buckets-live), calling the ``openai`` provider on a
fake upstream with known usage.

Concurrent runs on both instances under one $0.5 key cap settle under it: the bucket's record
(compare-and-set on its version) agrees with the runs' reported usage, and every call carried the
output limit its reservation was made for. ``kill -9`` of an instance mid-call lets its
reservation and run slot expire unpaid; 100 requests per minute over both admit at most 100.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from tests.api.api_helpers import start_server
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
from tests.pg_schema import fresh_schema
from tests.providers.upstream_fakes import FakeUpstream
from tests.timing import eventually, scaled

KEY = "hk_" + secrets.token_urlsafe(32)


async def read_bucket(dsn: str, name: str) -> dict[str, object]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT data FROM hermes_records WHERE namespace = 'budgets' AND key = %s", (name,)
        )
        row = await cur.fetchone()
    found: dict[str, object] = json.loads(row[0]) if row else {}
    return found


async def test_two_instances_on_postgres_share_one_cap(tmp_path: Path) -> None:
    async with fresh_schema() as dsn, FakeUpstream() as up:
        upstream = PricedUpstream(up)
        config = budget_config(up.url, {KEY: "spend_usd = 0.5"}, 60) + '\n[storage]\nbackend = "postgres"\n'
        env = {"HERMES_POSTGRES_DSN": dsn}
        servers = [start_server(tmp_path / f"i{i}", config=config, env=env) for i in range(2)]
        try:
            spent, completed, refused = await spend_burst(servers, KEY, 30, 0.5)
            assert completed >= 3 and refused >= 10  # concurrent demand was twice the cap
            mid = await read_bucket(dsn, f"key:{principal(KEY)}")
            assert mid["spent"] == pytest.approx(spent, abs=1e-9)
            spent += await fill_up(servers[0], KEY, upstream)
            bucket = await read_bucket(dsn, f"key:{principal(KEY)}")
        finally:
            upstream.release.set()
            for server in servers:
                server.stop()
    assert bucket["spent"] == pytest.approx(spent, abs=1e-9)
    assert 0.5 - 0.11 < spent <= 0.5 + 1e-9  # reached, not passed
    assert bucket["res"] == {} and bucket["runs"] == {}
    assert set(upstream.max_tokens) == {MAX_OUT}


async def test_a_killed_instance_and_requests_per_minute_on_postgres(tmp_path: Path) -> None:
    one, rpm = "hk_" + secrets.token_urlsafe(32), "hk_" + secrets.token_urlsafe(32)
    ttl = scaled(4)
    async with fresh_schema() as dsn, FakeUpstream() as up:
        upstream = PricedUpstream(up)
        keys = {one: "concurrent_runs = 1", rpm: "requests_per_minute = 100"}
        config = budget_config(up.url, keys, ttl) + '\n[storage]\nbackend = "postgres"\n'
        env = {"HERMES_POSTGRES_DSN": dsn}
        servers = [start_server(tmp_path / f"i{i}", config=config, env=env) for i in range(2)]
        victim, other = servers
        try:
            # 100 requests per minute over both instances (the window is the instances' clock's
            # minute; the burst must fall inside one).
            await eventually(lambda: time.time() % 60 < 25, timeout=70, interval=0.5, what="a minute's start")
            start = time.time()
            replies = await asyncio.gather(*(post_run(servers[i % 2], rpm, f"r {i}") for i in range(130)))
            assert int(start) // 60 == int(time.time()) // 60, "the burst straddled a minute"

            status, body, _ = await post_run(victim, one, "slow please")
            assert status == 202, body
            await asyncio.wait_for(upstream.slow_started.wait(), scaled(30))
            status, body, headers = await post_run(other, one, "second")
            assert_refusal(status, body, headers, "concurrent_runs")  # the slot is shared
            os.kill(victim.proc.pid, signal.SIGKILL)
            victim.proc.wait(10)

            async def admitted() -> str | None:
                status, body, _ = await post_run(other, one, "after the kill")
                return str(body["run_id"]) if status == 202 else None

            run_id = await eventually(admitted, timeout=ttl + scaled(20), interval=0.5, what="slot expired")
            assert (await settled(other, one, run_id))["status"] == "completed"
            bucket = await read_bucket(dsn, f"key:{principal(one)}")
            assert bucket["spent"] == pytest.approx(CALL_USD)  # the dead run's call was never charged

        finally:
            upstream.release.set()
            for server in servers:
                server.stop()
    admitted_runs = [b for status, b, _ in replies if status == 202]
    for status, body, headers in replies:
        if status != 202:
            assert_refusal(status, body, headers, "requests_per_minute")
    assert 90 <= len(admitted_runs) <= 100
