"""Runs across ``hermes api`` instances on one Redis bus: a run created on A streams from B,
resumes on B with ``Last-Event-ID``, takes steer, approval and stop posted to B, and ends with
``owner_lost`` when A is killed."""

from __future__ import annotations

import asyncio
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api.api_helpers import (
    HERMES,
    Server,
    assert_error,
    call,
    clean_env,
    parse_sse,
    start_server,
    write_config,
)
from tests.redis.conftest import Shared
from tests.timing import eventually, scaled

KEY = "hk_" + secrets.token_urlsafe(32)
SLOW = "[[tokens 400]] [[delay 25]] go"
GUARDED = '[[tool terminal {"command":"hermes-guard-test"}]] please'


def config(shared: Shared) -> str:
    return (
        shared.config
        + """
[agent]
provider_retries = 0
[titles]
refine = false
[bus]
backend = "redis"
heartbeat_s = 0.5
owner_grace_s = 3
[api_server]
approval_profile = "ask_everything"
"""
    )


def instances(tmp_path: Path, shared: Shared, n: int = 2, extra: str = "") -> list[Server]:
    env = {**shared.env, "API_SERVER_KEY": KEY}
    return [start_server(tmp_path / f"i{i}", config=config(shared) + extra, env=env) for i in range(n)]


async def start_run(server: Server, text: str) -> str:
    reply = await call(server, "POST", "/v1/runs", {"input": text})
    assert reply.status == 202, reply.text
    return str(reply.json["run_id"])


class Events:
    """An open ``GET /v1/runs/{id}/events`` stream, read frame by frame."""

    def __init__(self, server: Server, run_id: str, last_id: int | None = None) -> None:
        self.server, self.run_id, self.last_id = server, run_id, last_id
        self.client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=scaled(60)))
        self.resp: aiohttp.ClientResponse | None = None
        self.closed = False

    async def __aenter__(self) -> Events:
        headers = self.server.auth()
        if self.last_id is not None:
            headers["Last-Event-ID"] = str(self.last_id)
        self.resp = await self.client.get(f"{self.server.base}/v1/runs/{self.run_id}/events", headers=headers)
        assert self.resp.status == 200, await self.resp.text()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.resp is not None:
            self.resp.close()
        await self.client.close()

    async def next(self) -> dict[str, Any] | None:
        """Return the next event frame ``{id, data}``; None when the server closed the stream."""
        assert self.resp is not None
        frame: dict[str, Any] = {}
        while True:
            raw = await asyncio.wait_for(self.resp.content.readline(), scaled(30))
            if not raw:
                return None
            line = raw.decode().rstrip("\n")
            if line == "":
                if "data" in frame:
                    return frame
                frame = {}
            elif line.startswith("id: "):
                frame["id"] = int(line[4:])
            elif line.startswith("data: "):
                import json

                frame["data"] = json.loads(line[6:])
            elif line == ": stream closed":
                self.closed = True

    async def until(self, event: str) -> list[dict[str, Any]]:
        """Read frames up to and including the first ``event``."""
        seen = []
        while True:
            frame = await self.next()
            assert frame is not None, f"stream ended before {event}: {[f['data']['event'] for f in seen]}"
            seen.append(frame)
            if frame["data"]["event"] == event:
                return seen


async def wait_status(server: Server, run_id: str, *wanted: str) -> dict[str, Any]:
    async def current() -> dict[str, Any] | None:
        reply = await call(server, "GET", f"/v1/runs/{run_id}")
        status = dict(reply.json) if reply.status == 200 else {}
        return status if status.get("status") in wanted else None

    found: dict[str, Any] = await eventually(current, timeout=scaled(20), interval=0.05, what=run_id)
    return found


async def test_a_run_from_a_streams_resumes_takes_steer_and_stop_on_b(tmp_path: Path, shared: Shared) -> None:
    a, b = instances(tmp_path, shared)
    try:
        run_id = await start_run(a, SLOW)
        # Known everywhere by the time the 202 arrives: no wait before asking another instance.
        status = await call(b, "GET", f"/v1/runs/{run_id}")
        assert status.status == 200 and status.json["run_id"] == run_id, status.text
        async with Events(b, run_id) as stream:
            first = await stream.until("message.delta")
            assert first[0]["data"]["event"] == "run.started" and first[0]["id"] == 1
            assert [f["id"] for f in first] == list(range(1, len(first) + 1))
            more = [await stream.next() for _ in range(3)]
        seen = [*first, *more]
        last = seen[-1]["id"]
        # The connection dropped; B replays from the cursor, with nothing skipped or repeated.
        async with Events(b, run_id, last_id=last) as resumed:
            again = await resumed.next()
            assert again is not None and again["id"] == last + 1
            steer = await call(b, "POST", f"/v1/runs/{run_id}/steer", {"input": "fewer words"})
            assert steer.status == 200, steer.text
            assert steer.json == {"object": "hermes.run.steer", "run_id": run_id, "accepted": True}
            await resumed.until("run.steered")
            stop = await call(b, "POST", f"/v1/runs/{run_id}/stop")
            assert stop.status == 200 and stop.json["status"] == "stopping", stop.text
            rest = await resumed.until("run.cancelled")
            assert rest[-1]["data"]["pending_steer"] == "fewer words"
            assert await resumed.next() is None and resumed.closed
        status = await wait_status(b, run_id, "cancelled")
        assert status["turn_exit_reason"] == "interrupted_by_user"
        assert (await call(a, "GET", f"/v1/runs/{run_id}")).json["status"] == "cancelled"
        # Settled: a stop through B answers the final status, a steer is refused.
        assert (await call(b, "POST", f"/v1/runs/{run_id}/stop")).json["status"] == "cancelled"
        assert_error(
            await call(b, "POST", f"/v1/runs/{run_id}/steer", {"input": "late"}),
            409,
            "run_not_accepting_steer",
        )
        # Another principal cannot see the run on any instance.
        other = await call(b, "GET", f"/v1/runs/{run_id}", auth="Bearer hk_wrong_key_wrong_key_0123")
        assert other.status == 401
    finally:
        a.stop()
        b.stop()


async def test_an_approval_posted_to_b_reaches_the_owner(tmp_path: Path, shared: Shared) -> None:
    a, b = instances(tmp_path, shared)
    try:
        health = await call(b, "GET", "/health/detailed")
        bus = health.json["readiness"]["checks"]["bus"]
        assert health.status == 200 and bus["ok"] is True and bus["backend"] == "redis"
        assert bus["server"] == shared.url.split("//", 1)[1] and bus["instance_id"].count("-") >= 2
        log = await eventually(lambda: "Run bus:" in "".join(b.log) and "".join(b.log))
        assert f"Run bus: redis at {bus['server']} (this instance: {bus['instance_id']})" in log
        run_id = await start_run(a, GUARDED)
        waiting = await wait_status(b, run_id, "waiting_for_approval")
        assert waiting["approval"]["tool"] == "terminal"
        assert_error(
            await call(b, "POST", f"/v1/runs/{run_id}/approval", {"choice": "maybe"}),
            400,
            "invalid_approval_choice",
        )
        assert_error(
            await call(b, "POST", f"/v1/runs/{run_id}/approval", {"choice": "once", "request_id": "nope"}),
            409,
            "approval_not_pending",
        )
        ok = await call(b, "POST", f"/v1/runs/{run_id}/approval", {"choice": "deny"})
        assert ok.status == 200, ok.text
        assert ok.json["resolved"] == 1 and ok.json["request_id"] == waiting["approval"]["request_id"]
        done = await wait_status(b, run_id, "completed")
        async with Events(b, run_id) as stream:
            names = [f["data"]["event"] for f in await stream.until("run.completed")]
        assert names.index("approval.request") < names.index("approval.responded")
        assert done["status"] == "completed"
    finally:
        a.stop()
        b.stop()


async def test_kill_9_of_the_owner_ends_its_run_with_owner_lost(tmp_path: Path, shared: Shared) -> None:
    a, b = instances(tmp_path, shared)
    try:
        run_id = await start_run(a, SLOW)
        async with Events(b, run_id) as stream:
            await stream.until("message.delta")
            killed_at = time.monotonic()
            a.proc.send_signal(signal.SIGKILL)
            rest = await stream.until("run.failed")
            took = time.monotonic() - killed_at
            assert await stream.next() is None and stream.closed
        end = rest[-1]
        assert end["data"]["error_code"] == "owner_lost" and end["data"]["completed"] is False
        # Heartbeat 0.5 s, grace 3 s: gone 3 s after the last one, noticed within a poll.
        assert took < scaled(6), took
        status = await wait_status(b, run_id, "failed")
        assert status["error_code"] == "owner_lost"
        stop = await call(b, "POST", f"/v1/runs/{run_id}/stop")
        assert stop.status == 200 and stop.json["status"] == "failed"
        # A stream opened afterwards replays the terminal event and closes.
        async with Events(b, run_id, last_id=end["id"] - 1) as late:
            frame = await late.next()
            assert frame is not None and frame["data"]["error_code"] == "owner_lost"
    finally:
        a.stop(signal.SIGKILL)
        b.stop()


@pytest.mark.parametrize("problem", ["no-url", "no-server"])
async def test_a_missing_redis_is_one_clear_start_up_error(
    tmp_path: Path, shared: Shared, problem: str
) -> None:
    url = "" if problem == "no-url" else "redis://127.0.0.1:1/0"
    with pytest.raises(AssertionError) as failed:
        start_server(
            tmp_path / "x",
            config=config(shared),
            env={**shared.env, "HERMES_REDIS_URL": url, "API_SERVER_KEY": KEY},
        )
    text = str(failed.value)
    expected = (
        "HERMES_REDIS_URL or bus.url" if problem == "no-url" else "Redis at 127.0.0.1:1/0 is not reachable"
    )
    assert expected in text and "Traceback" not in text


def test_check_reports_the_bus(tmp_path: Path, shared: Shared) -> None:
    home = tmp_path / "home"
    write_config(home, config(shared))
    for url, code, line in [
        (shared.url, 0, "ok   bus (redis): 127.0.0.1:"),
        ("redis://127.0.0.1:1/0", 1, "FAIL bus (redis): Redis at 127.0.0.1:1/0 is not reachable"),
    ]:
        done = subprocess.run(
            [HERMES, "api", "--check"],
            env=clean_env(home, {**shared.env, "HERMES_REDIS_URL": url}),
            cwd=str(home),
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
        assert done.returncode == code, done.stdout + done.stderr
        assert any(x.startswith(line) for x in done.stdout.splitlines()), done.stdout


async def test_events_redis_no_longer_holds_come_from_the_event_log(tmp_path: Path, shared: Shared) -> None:
    import redis.asyncio as aioredis

    a, b = instances(tmp_path, shared)
    client = aioredis.from_url(shared.url, decode_responses=True)
    try:
        run_id = await start_run(a, "[[tokens 30]] [[delay 5]] go")
        done = await wait_status(b, run_id, "completed")
        last = done["last_seq"]
        live = await client.xrange(f"hermes:run:{run_id}")
        # Redis trimmed the stream's head and lost two entries in the middle: the reader on the
        # other instance still gets every event, read back from the shared event log.
        await client.xtrim(f"hermes:run:{run_id}", minid="5-0", approximate=False)
        await client.xdel(f"hermes:run:{run_id}", "6-0", "7-0")
        async with Events(b, run_id, last_id=1) as stream:
            assert stream.resp is not None
            text = await stream.resp.text()
        frames = [f for f in parse_sse(text) if "data" in f]
        assert [f["data"]["event"] for f in frames if f["data"]["event"] == "stream.gap"] == []
        assert [int(f["id"]) for f in frames] == list(range(2, last + 1))
        assert len(live) == last and frames[-1]["data"]["event"] == "run.completed"
    finally:
        await client.aclose()
        for srv in (a, b):
            srv.stop()


async def test_a_trimmed_cursor_gets_a_gap_and_an_expired_stream_its_terminal_event(
    tmp_path: Path, shared: Shared
) -> None:
    """Without the event log (``event_log.enabled = false``) what Redis lost is announced."""
    import redis.asyncio as aioredis

    a, b = instances(tmp_path, shared, extra="[event_log]\nenabled = false\n")
    client = aioredis.from_url(shared.url, decode_responses=True)
    try:
        run_id = await start_run(a, "[[tokens 30]] [[delay 5]] go")
        done = await wait_status(b, run_id, "completed")
        last = done["last_seq"]
        assert last >= 9
        # Redis trimmed the stream's head (as MAXLEN does): a cursor behind it is told, not skipped.
        await client.xtrim(f"hermes:run:{run_id}", minid="5-0", approximate=False)
        async with Events(b, run_id, last_id=1) as stream:
            assert stream.resp is not None
            text = await stream.resp.text()
        frames = [f for f in parse_sse(text) if "data" in f]
        assert frames[0]["data"]["event"] == "stream.gap"
        assert (frames[0]["data"]["from_seq"], frames[0]["data"]["to_seq"]) == (2, 4)
        assert [int(f["id"]) for f in frames[1:]] == list(range(5, last + 1))
        assert frames[-1]["data"]["event"] == "run.completed" and text.rstrip().endswith(": stream closed")
        # Entries missing in the middle (never delivered) are announced as a gap too.
        await client.xdel(f"hermes:run:{run_id}", "6-0", "7-0")
        async with Events(b, run_id, last_id=4) as stream:
            assert stream.resp is not None
            frames = [f for f in parse_sse(await stream.resp.text()) if "data" in f]
        assert [f.get("id") for f in frames[:3]] == ["5", None, "8"]
        assert (frames[1]["data"]["event"], frames[1]["data"]["from_seq"], frames[1]["data"]["to_seq"]) == (
            "stream.gap",
            6,
            7,
        )
        # The stream expired: the stored terminal event still ends the run for a reader, after a
        # stream.gap for the events it no longer holds.
        await client.delete(f"hermes:run:{run_id}")
        async with Events(b, run_id, last_id=2) as stream:
            assert stream.resp is not None
            frames = [f for f in parse_sse(await stream.resp.text()) if "data" in f]
        assert [f["data"]["event"] for f in frames] == ["stream.gap", "run.completed"]
        assert (frames[0]["data"]["from_seq"], frames[0]["data"]["to_seq"]) == (3, last - 1)
        assert int(frames[1]["id"]) == last
        assert (
            await call(b, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(last)})
        ).status == 204
    finally:
        await client.aclose()
        a.stop()
        b.stop()


async def test_a_cursor_past_the_end_gets_the_same_answer_on_every_instance(
    tmp_path: Path, shared: Shared
) -> None:
    a, b = instances(tmp_path, shared)
    try:
        # A cursor ahead of a running run: the reader on B waits, and is released when the run
        # settles before reaching it (it does not keep the stream open forever).
        run_id = await start_run(a, "[[tokens 20]] [[delay 20]] go")
        async with Events(b, run_id, last_id=10_000) as ahead:
            frames = []
            while (frame := await ahead.next()) is not None:
                frames.append(frame)
            assert ahead.closed and frames == []
        done = await wait_status(b, run_id, "completed")
        last = int(done["last_seq"])
        for server in (a, b):
            past = await call(
                server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(last + 3)}
            )
            frames = [f for f in parse_sse(past.text) if "data" in f]
            assert past.status == 200 and [int(f["id"]) for f in frames] == [last], past.text
            assert frames[0]["data"]["event"] == "run.completed" and past.text.rstrip().endswith(
                ": stream closed"
            )
            for bad in ("1" * 19, "99999999999999999999999"):
                assert_error(
                    await call(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": bad}),
                    400,
                    "invalid_last_event_id",
                )
    finally:
        a.stop()
        b.stop()


async def test_when_redis_goes_away_health_and_lookups_say_so_and_recover(
    tmp_path: Path, private_redis: tuple[str, Any]
) -> None:
    url, (start, stop) = private_redis
    shared = Shared(url, f'[storage]\npath = "{tmp_path / "shared.sqlite3"}"\n', {"HERMES_REDIS_URL": url})
    (a,) = instances(tmp_path, shared, 1)
    try:
        assert (await call(a, "GET", "/health/detailed")).status == 200
        stop()
        health = await call(a, "GET", "/health/detailed")
        assert health.status == 503 and health.json["readiness"]["checks"]["bus"]["ok"] is False
        assert "not reachable" in health.json["readiness"]["checks"]["bus"]["message"]
        err = assert_error(await call(a, "GET", "/v1/runs/run_" + "0" * 32), 503, "bus_unavailable")
        assert "Redis" in err["message"]
        # A run can still be started on this instance meanwhile: its turn runs, but the end of a
        # run is committed on the bus (a run ends once, everywhere), so it waits for Redis.
        run_id = await start_run(a, "hello while redis is away")

        async def answered() -> dict[str, Any] | None:
            status = dict((await call(a, "GET", f"/v1/runs/{run_id}")).json)
            return status if status["output"] == "You said: hello while redis is away" else None

        status = await eventually(answered, timeout=20, interval=0.1, what="the turn to answer")
        assert status["status"] == "running" and status["last_seq"] == 0, status  # nothing reserved yet
        start()

        async def healthy() -> bool:
            return (await call(a, "GET", "/health/detailed")).status == 200

        await eventually(healthy, timeout=20, interval=0.1, what="the bus back")
        assert (await wait_status(a, run_id, "completed"))["output"] == "You said: hello while redis is away"
        assert_error(await call(a, "GET", "/v1/runs/run_" + "0" * 32), 404, "run_not_found")

        # The outage is told once per retrying loop, not at every retry, and so is its end.
        def told(text: str) -> list[str]:
            return [line for line in a.log if line.startswith("WARNING hermes.redis") and text in line]

        failures = told("retrying until Redis answers")
        # At most one line per loop (command reader, heartbeat, event writer); the reader always
        # notices, it waits on Redis all the time.
        assert 1 <= len(failures) <= 3, failures
        await eventually(
            lambda: len(told("works again after")) == len(told("retrying until Redis answers")),
            what="the end of the outage told by every loop that told its start",
        )
        assert not [line for line in a.log if "Traceback" in line]
    finally:
        a.stop()


async def test_a_redis_restart_loses_no_control_of_running_runs(
    tmp_path: Path, shared: Shared, private_redis: tuple[str, Any]
) -> None:
    """Redis going away, then coming back empty (no persistence): while it is away a command
    through another instance is a clear 503, never an answer from a stale copy; once it is back
    the owner announces its runs again and the same command works."""
    url, (start, stop) = private_redis
    mine = Shared(url, shared.config, {**shared.env, "HERMES_REDIS_URL": url})
    a, b = instances(tmp_path, mine)
    try:
        run_id = await start_run(a, "[[tokens 3000]] [[delay 20]] go")
        await wait_status(b, run_id, "running")
        stop()
        for path, body in ((f"/v1/runs/{run_id}/stop", None), (f"/v1/runs/{run_id}/steer", {"text": "hi"})):
            reply = await call(b, "POST", path, body)
            assert reply.status == 503, reply.text
            assert reply.json["error"]["code"] in ("run_owner_unavailable", "bus_unavailable")
            assert reply.headers["Retry-After"] == "1"
        start()

        async def stopped() -> dict[str, Any] | None:
            reply = await call(b, "POST", f"/v1/runs/{run_id}/stop")
            return dict(reply.json) if reply.status == 200 else None

        answer = await eventually(stopped, timeout=30, interval=0.2, what="a stop through b after restart")
        assert answer["run_id"] == run_id
        done = await wait_status(a, run_id, "cancelled")
        assert done["last_event"] == "run.cancelled"
        # b follows the run again too: its record came back with the owner's announcement.
        assert (await call(b, "GET", f"/v1/runs/{run_id}")).json["status"] == "cancelled"
    finally:
        a.stop()
        b.stop()


async def test_readers_of_a_remote_run_are_capped_and_counted(tmp_path: Path, shared: Shared) -> None:
    a, b = instances(tmp_path, shared)
    try:
        run_id = await start_run(a, SLOW)
        streams = [Events(b, run_id) for _ in range(32)]
        try:
            for stream in streams:
                await stream.__aenter__()
            health = await call(b, "GET", "/health/detailed")
            assert health.json["api_server"]["run_subscribers"] == 32
            assert_error(await call(b, "GET", f"/v1/runs/{run_id}/events"), 429, "rate_limit_exceeded")
        finally:
            for stream in streams:
                await stream.__aexit__(None, None, None)

        async def released() -> bool:
            health = await call(b, "GET", "/health/detailed")
            return health.json["api_server"]["run_subscribers"] == 0

        await eventually(released, timeout=20, interval=0.1, what="the readers released")
        await call(a, "POST", f"/v1/runs/{run_id}/stop")
    finally:
        a.stop()
        b.stop()


async def test_on_one_sqlite_file_a_run_from_a_streams_resumes_and_stops_on_b(
    tmp_path: Path, sqlite_shared: Shared
) -> None:
    # The same story when the instances share one SQLite file instead of a database server: the
    # stored record of a running run is not the end of the lookup, the bus knows its owner.
    await test_a_run_from_a_streams_resumes_takes_steer_and_stop_on_b(tmp_path, sqlite_shared)


async def test_an_instance_started_on_the_same_sqlite_file_leaves_running_runs_alone(
    tmp_path: Path, sqlite_shared: Shared
) -> None:
    (a,) = instances(tmp_path, sqlite_shared, n=1)
    late: Server | None = None
    try:
        run_id = await start_run(a, SLOW)
        await wait_status(a, run_id, "running")
        env = {**sqlite_shared.env, "API_SERVER_KEY": KEY}
        late = start_server(tmp_path / "late", config=config(sqlite_shared), env=env)
        # Its start-up settles what dead processes left; a's run is alive, so it is not touched.
        seen = await call(late, "GET", f"/v1/runs/{run_id}")
        assert seen.status == 200 and seen.json["status"] == "running", seen.text
        assert (await wait_status(a, run_id, "completed"))["status"] == "completed"
        assert (await call(late, "GET", f"/v1/runs/{run_id}")).json["status"] == "completed"
    finally:
        a.stop()
        if late is not None:
            late.stop()
