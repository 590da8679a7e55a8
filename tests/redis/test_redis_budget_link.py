"""The budget ledger's own connection to Redis (docs/reference/budgets.md#cost): one ``EVALSHA``
per call and nothing else, the script sent again when Redis forgot it, a lost connection made
again by the next call, and every failure (a dropped link, a server that does not answer, a
refused password) a refusal: budgets fail closed."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from hermes_core import BucketLimits, BudgetUnavailable, LedgerCall
from hermes_redis.ledger import RedisLedger
from hermes_redis.script_link import link_for
from tests.redis.conftest import free_port
from tests.services import redis_server_binary
from tests.timing import scaled

LIMITS = [BucketLimits("key:k", spend_usd=10.0), BucketLimits("tenant:t", tokens_per_minute=10_000)]


async def _commands(admin: Any) -> dict[str, int]:
    stats = await admin.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


#: What the script itself runs (counted by Redis too), and the INFO that reads the counts.
INSIDE = {"get", "set", "time", "info"}


async def _turn(ledger: RedisLedger, n: int) -> None:
    assert (await ledger.apply(LIMITS, LedgerCall("reserve", "r", f"v{n}", 0.01, 100, 60))).ok
    assert (await ledger.apply(LIMITS, LedgerCall("settle", "r", f"v{n}", 0.005, 50))).ok


async def test_each_call_is_one_evalsha_and_the_script_comes_back_after_a_flush(
    private_redis: tuple[str, Any],
) -> None:
    url, _ = private_redis
    await _up(url)
    ledger = RedisLedger(url)
    admin = aioredis.from_url(url)
    try:
        await _turn(ledger, 0)  # the first call finds no script: EVAL sends it once
        before = await _commands(admin)
        for n in range(1, 11):
            await _turn(ledger, n)
        after = await _commands(admin)
        changed = [n for n in after if after[n] != before.get(n) and n not in INSIDE]
        spent = {n: after[n] - before.get(n, 0) for n in changed}
        assert spent == {"evalsha": 20}  # no SCRIPT LOAD, PING, SELECT or second round trip
        await admin.script_flush()  # Redis forgets the script (as a restart does)
        await _turn(ledger, 11)
        state = await ledger.read("key:k")
        assert state["spent"] == pytest.approx(12 * 0.005) and state["res"] == {}
    finally:
        await admin.aclose()
        await ledger.aclose()


async def test_a_killed_connection_refuses_what_waits_on_it_and_the_next_call_reconnects(
    private_redis: tuple[str, Any],
) -> None:
    url, _ = private_redis
    await _up(url)
    ledger = RedisLedger(url)
    admin = aioredis.from_url(url)
    try:
        await _turn(ledger, 0)
        # A call in flight while its connection is killed.
        busy = asyncio.ensure_future(ledger.apply(LIMITS, LedgerCall("reserve", "r", "held", 0.01, 1, 60)))
        await asyncio.sleep(0)
        await admin.client_kill_filter(_type="normal", skipme=True)
        try:
            await busy  # answered before the kill, or refused by it: never hung
        except BudgetUnavailable as exc:
            assert "does not answer" in str(exc)
        await _turn(ledger, 1)  # a new connection
    finally:
        await admin.aclose()
        await ledger.aclose()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


async def test_a_server_that_does_not_answer_refuses_within_the_reply_timeout(silent_server: int) -> None:
    ledger = RedisLedger(f"redis://127.0.0.1:{silent_server}/0", reply_timeout_s=0.3)
    try:
        started = time.monotonic()
        calls = [ledger.apply(LIMITS, LedgerCall("reserve", "r", f"v{n}", 0.01, 1, 60)) for n in range(3)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, BudgetUnavailable) for r in results), results
        assert "no reply within 0.3 s" in str(results[0])
        assert time.monotonic() - started < scaled(3.0)
    finally:
        await ledger.aclose()


async def test_an_unreachable_server_refuses() -> None:
    ledger = RedisLedger(f"redis://127.0.0.1:{free_port()}/0")
    try:
        with pytest.raises(BudgetUnavailable, match="does not answer"):
            await ledger.apply(LIMITS, LedgerCall("reserve", "r", "v", 0.01, 1, 60))
    finally:
        await ledger.aclose()


@pytest.fixture
def password_redis(tmp_path: Path) -> Iterator[int]:
    """A Redis of this test's own that asks for the password ``s3cret``."""
    binary = redis_server_binary()
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--requirepass", "s3cret"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


async def _up(url: str) -> None:
    client = aioredis.from_url(url)
    try:
        deadline = time.monotonic() + scaled(10.0)
        while True:
            try:
                await client.ping()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
    finally:
        await client.aclose()


async def test_a_password_and_a_database_in_the_url_are_used(password_redis: int) -> None:
    url = f"redis://:s3cret@127.0.0.1:{password_redis}/3"
    await _up(url)
    ledger = RedisLedger(url)
    try:
        await _turn(ledger, 0)
        assert (await ledger.read("key:k"))["spent"] == pytest.approx(0.005)
    finally:
        await ledger.aclose()
    other = aioredis.from_url(f"redis://:s3cret@127.0.0.1:{password_redis}/0")
    try:
        assert await other.get("hermes:budget:key:k") is None  # it went to database 3
    finally:
        await other.aclose()
    wrong = RedisLedger(f"redis://:nope@127.0.0.1:{password_redis}/0")
    try:
        with pytest.raises(BudgetUnavailable, match="does not answer"):
            await wrong.apply(LIMITS, LedgerCall("reserve", "r", "v", 0.01, 1, 60))
    finally:
        await wrong.aclose()


def test_only_plain_and_unix_urls_get_the_own_link() -> None:
    assert link_for("redis://127.0.0.1:6379/0", "return 1") is not None
    assert link_for("unix:///tmp/redis.sock?db=2", "return 1") is not None
    assert link_for("rediss://127.0.0.1:6380/0", "return 1") is None  # TLS: redis-py's client


async def test_through_redis_py_the_ledger_answers_alike(private_redis: tuple[str, Any]) -> None:
    url, _ = private_redis
    await _up(url)
    ledger = RedisLedger(url, own_link=False)
    try:
        await _turn(ledger, 0)
        over = await ledger.apply(LIMITS, LedgerCall("reserve", "r", "big", 20.0, 1, 60))
        assert not over.ok and over.bucket == "key:k" and over.limit == "spend_usd"
        assert (await ledger.read("key:k"))["spent"] == pytest.approx(0.005)
    finally:
        await ledger.aclose()
    with pytest.raises(BudgetUnavailable, match="does not answer"):
        dead = RedisLedger(f"redis://127.0.0.1:{free_port()}/0", own_link=False)
        try:
            await dead.apply(LIMITS, LedgerCall("reserve", "r", "v", 0.01, 1, 60))
        finally:
            await dead.aclose()
