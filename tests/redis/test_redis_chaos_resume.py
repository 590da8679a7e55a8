"""Chaos: three instances behind nginx on PostgreSQL and Redis; a client streams a run, its owner
is killed with ``kill -9`` mid-turn and restarted on the same port, the client reconnects through
nginx with its ``Last-Event-ID``: nothing it had is repeated or means another event, nothing is
skipped without a ``stream.gap``, the run ends with its terminal event, and the session's next
turn works (docs/reference/api-server.md#resume-after-a-restart, #run-bus)."""

from __future__ import annotations

import signal
from typing import Any

import redis.asyncio as aioredis

from tests.api.api_helpers import Server, call, start_server
from tests.api.stored_log import stored_turn
from tests.redis.conftest import Shared
from tests.redis.stream_checks import TERMINAL_EVENTS, check_stream
from tests.redis.test_redis_instances import Events, config
from tests.redis.test_redis_nginx import KEY, cluster, listening  # noqa: F401 (the fixture)
from tests.services import postgres_dsn


async def test_a_run_resumes_through_nginx_after_its_owner_is_killed_and_restarted(
    cluster: tuple[Any, list[Server]],  # noqa: F811
    shared: Shared,
) -> None:
    postgres_dsn()
    front, backends = cluster
    await listening(front)
    session = {"X-Hermes-Session-Id": "chaos"}
    slow = {"input": "[[tokens 400]] [[delay 25]] go"}
    reply = await call(front, "POST", "/v1/runs", slow, headers=session)
    assert reply.status == 202, reply.text
    run_id = reply.json["run_id"]
    client = aioredis.from_url(shared.url, decode_responses=True)
    try:
        owner = await client.hget(f"hermes:runinfo:{run_id}", "owner")
    finally:
        await client.aclose()
    victim = next(b for b in backends if f"-{b.proc.pid}-" in owner)
    before: list[dict[str, Any]] = []
    async with Events(front, run_id) as stream:
        while sum(f["data"]["event"] == "message.delta" for f in before) < 10:
            before += [await stream.next() or {}]
        victim.proc.send_signal(signal.SIGKILL)  # kill -9 mid-turn
        victim.proc.wait(10)
    seen = check_stream(before)
    cursor = max(seen)
    # What the killed owner's log holds of the turn: the client saw no more than that.
    storage = {"backend": "postgres", "dsn": shared.env["HERMES_POSTGRES_DSN"]}
    stored = await stored_turn(storage, reply.json["session_id"])
    assert cursor <= 1 + len(stored.deltas), (cursor, stored)
    # The killed instance comes back on the same port (nginx keeps sending it requests).
    restarted = start_server(
        victim.home,
        "--port",
        str(victim.port),
        config=config(shared),
        env={**shared.env, "API_SERVER_KEY": KEY},
    )
    backends[backends.index(victim)] = restarted  # stopped by the fixture
    after: list[dict[str, Any]] = []
    async with Events(front, run_id, last_id=cursor) as stream:
        while not after or after[-1]["data"]["event"] not in TERMINAL_EVENTS:
            frame = await stream.next()
            assert frame is not None, after
            after.append(frame)
    rest = check_stream(after, cursor)
    assert not set(rest) & set(seen), "a seq came twice"
    end = after[-1]["data"]
    assert end["event"] == "run.failed" and end["error_code"] == "owner_lost", end
    gaps = [f["data"] for f in after if f["data"]["event"] == "stream.gap"]
    # Events the bus's stream lacks come from the session's event log (in PostgreSQL), and the
    # owner_lost end is numbered right after the last event the owner can have shown (it shows
    # only stored events, and only while its liveness lease holds): no gap, nothing skipped.
    assert gaps == [], gaps
    assert sorted(rest) == list(range(cursor + 1, end["seq"] + 1)), sorted(rest)
    # ... right after the last stored event: run.started, one message.delta per stored delta.
    assert end["seq"] == 1 + len(stored.deltas) + 1, (end, stored)
    print(f"chaos: {len(before)} frames before the kill, {len(after)} after, end seq {end['seq']}")
    # Every instance, the restarted one included, tells the same ending; the session goes on.
    status = await call(restarted, "GET", f"/v1/runs/{run_id}")
    assert (status.json["status"], status.json["last_seq"]) == ("failed", end["seq"]), status.text
    nxt = await call(front, "POST", "/v1/runs", {"input": "next turn"}, headers=session)
    assert nxt.status == 202, nxt.text
    async with Events(front, nxt.json["run_id"]) as stream:
        frames = await stream.until("run.completed")
    check_stream(frames)
