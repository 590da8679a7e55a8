"""The web console behind nginx (round robin) in front of three ``hermes api`` instances sharing
PostgreSQL and Redis (docs/console.md#behind-a-load-balancer): a session opened on one instance
works on all of them, sign-out through one ends it on all, and every console call on a run works
whichever instance it lands on, the run's owner or not."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api.api_helpers import Reply, Server, assert_error, call, start_server
from tests.api.console.helpers import KEY_A, KEY_B, Console, open_console
from tests.redis.conftest import Shared
from tests.redis.test_redis_instances import config
from tests.redis.test_redis_nginx import Front, listening
from tests.services import postgres_dsn
from tests.timing import eventually, scaled

CONSOLE = f'console = true\nkeys = ["{KEY_A}", "{KEY_B}"]\nconsole_signin_max_failures = 3\n'
GUARDED = '[[tool terminal {"command":"echo hermes-guard-test"}]] check'
SLOW = "[[tokens 400]] [[delay 25]] go"
WRONG = "hk_not_a_key_of_this_server_000000"
TERMINAL = ("run.completed", "run.failed", "run.cancelled")
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def console_cluster(tmp_path: Path, shared: Shared) -> Iterator[tuple[Front, list[Server]]]:
    postgres_dsn()  # the console's sessions are shared through the PostgreSQL records
    text = config(shared) + CONSOLE + "[delegation]\nmax_spawn_depth = 2\n"
    backends = [start_server(tmp_path / f"i{i}", config=text, env=shared.env) for i in range(3)]
    front = Front(tmp_path / "nginx", backends)
    front.key = KEY_A
    try:
        yield front, backends
    finally:
        front.stop()
        for b in backends:
            b.stop()


@pytest.fixture
async def browser_like(console_cluster: tuple[Front, list[Server]]) -> AsyncIterator[Console]:
    front, _ = console_cluster
    await listening(front)
    c = open_console(front)  # type: ignore[arg-type]
    yield c
    await c.client.close()


def cookie_of(c: Console) -> dict[str, str]:
    value = next(m.value for m in c.client.cookie_jar if m.key == "hermes_console")
    return {"Cookie": f"hermes_console={value}"}


async def on(server: Server, c: Console, method: str, path: str, body: Any = None) -> Reply:
    """One console call sent straight to ``server`` (its own origin), with the browser's cookie."""
    headers = {**cookie_of(c), "Origin": server.base}
    if method != "GET" and c.csrf:
        headers["X-Hermes-CSRF"] = c.csrf
    return await call(server, method, path, body, headers=headers, auth=False)


async def owner_of(shared: Shared, run_id: str, backends: list[Server]) -> Server:
    import redis.asyncio as aioredis

    client = aioredis.from_url(shared.url, decode_responses=True)
    try:
        owner = await client.hget(f"hermes:runinfo:{run_id}", "owner")
    finally:
        await client.aclose()
    return next(b for b in backends if f"-{b.proc.pid}-" in owner)


class ConsoleEvents:
    """The console's live event stream of a run (``/console/api/runs/{id}/events``), frame by frame."""

    def __init__(self, server: Server, c: Console, run_id: str) -> None:
        self.url = f"{server.base}/console/api/runs/{run_id}/events"
        self.headers = cookie_of(c)
        self.client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=scaled(60)))
        self.resp: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> ConsoleEvents:
        self.resp = await self.client.get(self.url, headers=self.headers)
        assert self.resp.status == 200, await self.resp.text()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.resp is not None:
            self.resp.close()
        await self.client.close()

    async def until(self, *names: str) -> list[dict[str, Any]]:
        """Read frames up to and including the first whose event is one of ``names``."""
        assert self.resp is not None
        seen: list[dict[str, Any]] = []
        while True:
            raw = await asyncio.wait_for(self.resp.content.readline(), scaled(30))
            assert raw, f"stream ended before {names}: {[f['event'] for f in seen]}"
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
                if seen[-1]["event"] in names:
                    return seen


async def test_a_session_opened_on_one_instance_works_on_all_and_sign_out_ends_it_everywhere(
    console_cluster: tuple[Front, list[Server]], browser_like: Console
) -> None:
    front, backends = console_cluster
    c = browser_like
    assert (await c.sign_in(KEY_A)).status == 200
    # Many calls through the balancer, round robin: every one is signed in.
    for _ in range(12):
        assert (await c.request("GET", "/console/api/runs", csrf=False)).status == 200
    whoami = await c.request("GET", "/console/api/session", csrf=False)
    assert whoami.status == 200 and whoami.json["csrf_token"] == c.csrf
    # A browser sends its Origin (the balancer's host and port) with every POST: each instance
    # must see the Host the browser used to accept it (nginx passes it on with its port).
    for _ in range(3):
        started = await c.request("POST", "/console/api/runs", {"input": "hi"}, Origin=front.base)
        assert started.status == 202, started.text
    elsewhere = await c.request("POST", "/console/api/runs", {"input": "x"}, Origin="http://evil.example")
    assert_error(elsewhere, 403, "origin_not_allowed")
    # And on each instance by itself, a state-changing call (Origin, cookie, CSRF) included.
    for b in backends:
        assert (await on(b, c, "GET", "/console/api/session")).status == 200
        started = await on(b, c, "POST", "/console/api/runs", {"input": "hello"})
        assert started.status == 202, started.text
    # The wrong CSRF token is still refused on every instance.
    for b in backends:
        bad = await call(
            b, "POST", "/console/api/runs", {"input": "x"}, auth=False,
            headers={**cookie_of(c), "X-Hermes-CSRF": "not-the-token"},
        )  # fmt: skip
        assert_error(bad, 403, "csrf_failed")
    cookie = cookie_of(c)
    out = await c.request("DELETE", "/console/api/session")
    assert out.status == 200, out.text
    for b in backends:  # signed out everywhere at once, whoever keeps sending the old cookie
        for path in ("/console/api/runs", "/console/api/session"):
            reply = await call(b, "GET", path, headers=cookie, auth=False)
            assert_error(reply, 401, "console_signed_out")


async def test_a_session_outlives_the_restart_of_the_instance_that_opened_it(
    console_cluster: tuple[Front, list[Server]], browser_like: Console, tmp_path: Path, shared: Shared
) -> None:
    backends = console_cluster[1]
    c = browser_like
    assert (await c.sign_in(KEY_A)).status == 200
    first = backends[0]
    first.stop()
    again = start_server(tmp_path / "i0", env=shared.env)  # same home and configuration
    backends[0] = again
    try:
        assert (await on(again, c, "GET", "/console/api/runs")).status == 200
    finally:
        again.stop()


async def test_every_console_call_on_a_run_works_on_instances_that_do_not_own_it(
    console_cluster: tuple[Front, list[Server]], browser_like: Console, shared: Shared
) -> None:
    backends = console_cluster[1]
    c = browser_like
    assert (await c.sign_in(KEY_A)).status == 200

    # A long run: listed, streamed, steered and stopped through the two instances that do not own it.
    run_id = (await on(backends[0], c, "POST", "/console/api/runs", {"input": SLOW})).json["run_id"]
    owner = await owner_of(shared, run_id, backends)
    others = [b for b in backends if b is not owner]
    for b in others:
        listed = (await on(b, c, "GET", "/console/api/runs")).json["data"]
        assert run_id in [r["run_id"] for r in listed]
        assert (await on(b, c, "GET", f"/console/api/runs/{run_id}")).json["run_id"] == run_id
    async with ConsoleEvents(others[0], c, run_id) as stream:
        await stream.until("message.delta")
        steer = await on(others[1], c, "POST", f"/console/api/runs/{run_id}/steer", {"input": "short"})
        assert steer.status == 200, steer.text
        assert "run.steered" in [f["event"] for f in await stream.until("run.steered")]
        stop = await on(others[0], c, "POST", f"/console/api/runs/{run_id}/stop")
        assert stop.status == 200 and stop.json["status"] in ("stopping", "cancelled"), stop.text
        await stream.until("run.cancelled")

    # An approval, answered from an instance that does not own the run.
    guarded = (await on(backends[1], c, "POST", "/console/api/runs", {"input": GUARDED})).json["run_id"]
    assert len(await answer_from_a_non_owner(c, shared, backends, guarded)) == 1

    # A subagent's approval, the same way.
    goal = '[[tool terminal {"command": "echo hermes-guard-test from-the-child"}]] check'
    parent = f"[[tool delegate_task {json.dumps({'goal': goal})}]]"
    child_run = (await on(backends[2], c, "POST", "/console/api/runs", {"input": parent})).json["run_id"]
    asked = await answer_from_a_non_owner(c, shared, backends, child_run)
    assert [a["tool"] for a in asked if a.get("task_id")] == ["terminal"]  # the child's, answered


async def answer_from_a_non_owner(
    c: Console, shared: Shared, backends: list[Server], run_id: str
) -> list[dict[str, Any]]:
    """Answer every approval of a run from an instance that does not own it; return the requests."""
    owner = await owner_of(shared, run_id, backends)
    other = next(b for b in backends if b is not owner)
    asked: list[dict[str, Any]] = []
    async with ConsoleEvents(other, c, run_id) as stream:
        while True:
            last = (await stream.until("approval.request", *TERMINAL))[-1]
            if last["event"] != "approval.request":
                break
            asked.append(last)
            reply = await on(
                other, c, "POST", f"/console/api/runs/{run_id}/approval",
                {"request_id": last["request_id"], "choice": "once"},
            )  # fmt: skip
            assert reply.status == 200 and reply.json["resolved"] == 1, reply.text
    assert last["event"] == "run.completed", last
    status = (await on(other, c, "GET", f"/console/api/runs/{run_id}")).json
    assert status["status"] == "completed", status
    return asked


async def test_wrong_keys_through_the_balancer_are_throttled(
    console_cluster: tuple[Front, list[Server]], browser_like: Console
) -> None:
    c = browser_like
    # Each instance counts the wrong keys it saw; round robin spreads them, so the balancer lets
    # at most (instances x limit) through before every instance refuses.
    refused = None
    for _ in range(3 * 3 + 1):
        reply = await c.sign_in(WRONG)
        if reply.status == 429:
            refused = reply
            break
        assert_error(reply, 401, "invalid_api_key")
    assert refused is not None, "no 429 after 10 wrong keys"
    assert_error(refused, 429, "rate_limit_exceeded")
    assert int(refused.headers["Retry-After"]) >= 1

    async def all_refuse() -> bool:
        replies = [await c.sign_in(WRONG) for _ in range(3)]
        return all(r.status == 429 for r in replies)

    await eventually(all_refuse, timeout=scaled(10), interval=0.05, what="every instance to refuse")
    assert_error(await c.request("GET", "/console/api/runs", csrf=False), 401, "console_signed_out")
