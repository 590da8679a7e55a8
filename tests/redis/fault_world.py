"""A world to break on purpose: ``hermes api`` instances on one PostgreSQL schema and a Redis of
the test's own (it is restarted empty; the shared test Redis is never touched), and the checks
that must hold on every instance whatever failed (issue 29): one terminal event per run, the same
everywhere; no seq that means two events; a ``stream.gap`` before every jump; statuses and the
durable record equal to the stream's terminal event."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.api.api_helpers import Server, call, start_server
from tests.redis.stream_checks import TERMINAL_EVENTS, check_stream
from tests.redis.test_redis_instances import Events
from tests.timing import eventually, scaled

KEY = "hk_" + secrets.token_urlsafe(32)
#: How long an instance may go without a heartbeat before its runs are ended (bus.owner_grace_s).
GRACE = 5.0
HEARTBEAT = 0.5


@dataclass
class World:
    """Instances sharing one database and one private Redis."""

    tmp: Path
    redis_url: str
    dsn: str
    redis_start: Any
    redis_stop: Any
    servers: list[Server] = field(default_factory=list)

    def config(self, heartbeat: float = HEARTBEAT) -> str:
        return f"""
[storage]
backend = "postgres"
[agent]
provider_retries = 0
[titles]
refine = false
[bus]
backend = "redis"
heartbeat_s = {heartbeat}
owner_grace_s = {GRACE}
[api_server]
approval_profile = "ask_everything"
"""

    def instances(self, n: int, heartbeat: float = HEARTBEAT) -> list[Server]:
        env = {"HERMES_REDIS_URL": self.redis_url, "HERMES_POSTGRES_DSN": self.dsn, "API_SERVER_KEY": KEY}
        made = [
            start_server(self.tmp / f"i{len(self.servers) + i}", config=self.config(heartbeat), env=env)
            for i in range(n)
        ]
        self.servers += made
        return made

    async def restart_redis_empty(self) -> None:
        """Stop the Redis and start an empty one on the same port (no persistence)."""
        self.redis_stop()
        self.redis_start()
        await redis_answers(self.redis_url)


async def redis_answers(url: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(url)

    async def up() -> bool:
        try:
            return bool(await client.ping())
        except Exception:
            return False

    try:
        await eventually(up, timeout=20, interval=0.02, what="the private redis")
    finally:
        await client.aclose()


async def create_run(server: Any, text: str, session_id: str | None = None) -> str:
    body: dict[str, Any] = {"input": text}
    if session_id is not None:
        body["session_id"] = session_id
    reply = await call(server, "POST", "/v1/runs", body)
    assert reply.status == 202, reply.text
    return str(reply.json["run_id"])


class Tap:
    """Follow a run's events on one instance (or through nginx) in the background, from a cursor to
    the end of the stream, as a client would: a stream that ends without ``: stream closed`` (the
    bus went away) or a 503 is retried with ``Last-Event-ID``. Keeps every connection's frames.

    :param drops: how many times the client itself drops its connection after a few events (and
        comes back with its cursor).
    """

    def __init__(self, server: Any, run_id: str, cursor: int = 0, drops: int = 0) -> None:
        self.server, self.run_id, self.start = server, run_id, cursor
        self.drops = drops
        #: (cursor the connection started at, its frames), one per connection.
        self.segments: list[tuple[int, list[dict[str, Any]]]] = []
        self.task = asyncio.create_task(self._read(cursor))

    async def _read(self, cursor: int) -> None:
        while True:
            closed = False
            headers = self.server.auth()
            if cursor:
                headers["Last-Event-ID"] = str(cursor)
            url = f"{self.server.base}/v1/runs/{self.run_id}/events"
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_read=scaled(30))) as client:
                async with client.get(url, headers=headers) as resp:
                    if resp.status in (502, 503, 504):
                        await asyncio.sleep(0.2)
                        continue
                    if resp.status == 204:
                        return  # the cursor is the terminal event: nothing more to come
                    assert resp.status == 200, await resp.text()
                    frames: list[dict[str, Any]] = []
                    self.segments.append((cursor, frames))
                    async for frame, is_closed in _frames(resp):
                        if is_closed:
                            closed = True
                            break
                        frames.append(frame)
                        if "id" in frame:
                            cursor = frame["id"]
                        if self.drops and len(frames) >= 4:
                            self.drops -= 1
                            break  # the client's connection drops; it comes back with its cursor
            if closed:
                return
            await asyncio.sleep(0.1)

    @property
    def frames(self) -> list[dict[str, Any]]:
        return [f for _, frames in self.segments for f in frames]

    def count(self, event: str) -> int:
        return sum(1 for f in self.frames if f["data"]["event"] == event)

    @property
    def end(self) -> dict[str, Any] | None:
        return next((f["data"] for f in self.frames if f["data"]["event"] in TERMINAL_EVENTS), None)

    async def done(self) -> list[tuple[int, list[dict[str, Any]]]]:
        await asyncio.wait_for(self.task, scaled(90))
        return self.segments


async def _frames(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[dict[str, Any], bool]]:
    """Yield ``({id?, data}, False)`` per event frame, then ``({}, True)`` at ``: stream closed``."""
    frame: dict[str, Any] = {}
    while True:
        try:
            raw = await resp.content.readline()
        except (TimeoutError, aiohttp.ClientError):
            return
        if not raw:
            return
        line = raw.decode().rstrip("\n")
        if line == ": stream closed":
            yield {}, True
            return
        if line == "":
            if "data" in frame:
                yield frame, False
            frame = {}
        elif line.startswith("id: "):
            frame["id"] = int(line[4:])
        elif line.startswith("data: "):
            frame["data"] = json.loads(line[6:])


async def read_all(server: Any, run_id: str, cursor: int = 0) -> list[dict[str, Any]]:
    """Replay a run's stream from ``cursor`` to its end on one instance."""
    async with Events(server, run_id, last_id=cursor or None) as stream:
        frames = []
        while (frame := await stream.next()) is not None:
            frames.append(frame)
        assert stream.closed
    return frames


async def stored(dsn: str, run_id: str) -> tuple[bool, dict[str, Any]]:
    """Return (terminal, status) of the run's ``api.runs`` record, as PostgreSQL holds it."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT data FROM hermes_records WHERE namespace = 'api.runs' AND key = %s", (run_id,)
        )
        row = await cur.fetchone()
    assert row is not None, run_id
    value = json.loads(row[0])
    return bool(value["terminal"]), value["status"]


async def transcript(dsn: str, session_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Return (role, content, meta) of the session's active rows, in order."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT role, content, meta FROM hermes_messages WHERE session_id=%s AND active"
            " ORDER BY position, id",
            (session_id,),
        )
        rows = await cur.fetchall()
    return [(r[0], r[1], json.loads(r[2]) if r[2] else {}) for r in rows]


async def one_ending(
    servers: list[Server], run_id: str, dsn: str, taps: tuple[Tap, ...] = ()
) -> dict[str, Any]:
    """Assert that the run ended once, the same way, on every instance and for every reader;
    return its terminal event.

    Replays the whole stream on each instance and checks what each tap read live: no silent
    jump, one terminal event, and every seq means the same event wherever it was read. The
    status each instance answers, its listing and the durable record carry that same end.
    """
    meaning: dict[int, dict[str, Any]] = {}
    ends: list[dict[str, Any]] = []

    def merge(events: dict[int, dict[str, Any]], where: str) -> None:
        for seq, event in events.items():
            first = meaning.setdefault(seq, event)
            assert first == event, f"seq {seq} means two events ({where}): {first} / {event}"

    for server in servers:
        events = check_stream(await read_all(server, run_id))
        merge(events, f"replay on :{server.port}")
        ends.append(events[max(events)])
    for tap in taps:
        seen: dict[int, dict[str, Any]] = {}
        for start, frames in await tap.done():
            events = check_stream(frames, start)
            merge(events, f"live reader on {tap.server.base}")
            seen.update(events)
        finals = [e for e in seen.values() if e["event"] in TERMINAL_EVENTS]
        assert len(finals) == 1, finals
        ends.append(finals[0])
    end = ends[0]
    assert end["event"] in TERMINAL_EVENTS, end
    assert all(e == end for e in ends), ends
    for server in servers:
        status = (await call(server, "GET", f"/v1/runs/{run_id}")).json
        assert (status["status"], status["last_event"], status["last_seq"]) == (
            end["event"].split(".", 1)[1],
            end["event"],
            end["seq"],
        ), (server.port, status, end)
        assert status.get("error_code") == end.get("error_code"), status
        listed = next(
            r for r in (await call(server, "GET", "/v1/runs")).json["data"] if r["run_id"] == run_id
        )
        assert (listed["status"], listed["last_seq"]) == (status["status"], end["seq"]), listed
    terminal, record = await stored(dsn, run_id)
    assert terminal and record["terminal_event"] == end, record
    return end
