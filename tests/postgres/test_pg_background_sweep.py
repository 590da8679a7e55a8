"""Background responses whose owner is gone are settled on shared PostgreSQL records without
anyone asking for them: by an instance's start-up sweep after a ``kill -9`` (one instance only,
however many start), and by a running instance's periodic sweep once a frozen owner's lease went
stale. The stored object is then ``failed`` with ``error.code`` ``owner_lost``; a live owner's
response is never settled (docs/reference/api-server.md#background-responses). The SQLite case
is in ``tests/api/test_api_background_sweep.py``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
from pathlib import Path
from typing import Any

import openai

from tests.api.api_helpers import Server, start_server
from tests.timing import eventually, scaled

KEY = "hk_" + secrets.token_urlsafe(32)
#: About 10 s of output: the owner is killed long before it ends.
SLOW = "[[tokens 400]] [[delay 25]] go"
CONFIG = """
[storage]
backend = "postgres"
[agent]
provider_retries = 0
[titles]
refine = false
[bus]
heartbeat_s = 0.5
owner_grace_s = 3
"""
RUNNING = ("queued", "in_progress")
SETTLED = "settled failed: its owner is gone"


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=KEY, max_retries=0, timeout=scaled(60))


async def stored(dsn: str, response_id: str) -> dict[str, Any]:
    """The response object as the PostgreSQL records hold it (no request to any server)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT data FROM hermes_records WHERE namespace = 'api.responses' AND key = %s", (response_id,)
        )
        row = await cur.fetchone()
    assert row is not None, f"response {response_id} is not stored"
    obj: dict[str, Any] = json.loads(row[0])["object"]
    return obj


async def settled_in(dsn: str, response_id: str) -> dict[str, Any] | None:
    obj = await stored(dsn, response_id)
    return obj if obj["status"] not in RUNNING else None


async def start_background(server: Server, events: int) -> tuple[str, list[Any], Any]:
    """Create a slow background response; read its first ``events`` stream events."""
    stream = await asyncio.to_thread(
        client(server).responses.create, model="hermes-agent", input=SLOW, background=True, stream=True
    )

    def take() -> list[Any]:
        got = []
        for event in stream:
            got.append(event)
            if len(got) >= events:
                break
        return got

    before = await asyncio.to_thread(take)
    return before[0].response.id, before, stream


async def test_a_killed_owners_response_is_settled_once_by_instances_starting(
    tmp_path: Path, pg_dsn: str
) -> None:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    servers = [a]
    try:
        response_id, before, stream = await start_background(a, 30)
        stream.close()
        a.proc.kill()  # kill -9 mid-turn
        a.proc.wait(10)
        assert (await stored(pg_dsn, response_id))["status"] in RUNNING
        # Two instances start at once; nobody asks either of them about the response.
        started = await asyncio.gather(
            *(asyncio.to_thread(start_server, tmp_path / name, config=CONFIG, env=env) for name in "cd")
        )
        servers.extend(started)
        obj = await eventually(
            lambda: settled_in(pg_dsn, response_id), timeout=scaled(20), interval=0.1, what="the settle"
        )
        assert obj["status"] == "failed" and obj["error"]["code"] == "owner_lost", obj
        assert "stopped answering" in obj["error"]["message"]
        text = "".join(e.delta for e in before if e.type == "response.output_text.delta")
        assert text and obj["output"][0]["content"][0]["text"].startswith(text)
        # Exactly one of them settled it.
        c, d = started
        settles = [line for server in (c, d) for line in server.log if SETTLED in line]
        assert len(settles) == 1, c.log[-10:] + d.log[-10:]
        for server in (c, d):
            told = await asyncio.to_thread(client(server).responses.retrieve, response_id)
            assert told.status == "failed" and told.error is not None and told.error.code == "owner_lost"
            assert told.output_text == obj["output"][0]["content"][0]["text"]
        assert await stored(pg_dsn, response_id) == obj
    finally:
        for server in servers:
            if server.proc.poll() is None:
                server.stop()


async def test_a_frozen_owners_response_is_settled_by_the_periodic_sweep(tmp_path: Path, pg_dsn: str) -> None:
    """An owner frozen (``SIGSTOP``) past ``bus.owner_grace_s`` is alive as a process, so only its
    stale lease tells: a running instance's sweep settles the response with nobody asking, and
    the owner, woken, ends its own stream with that ending instead of writing another."""
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        response_id, before, stream = await start_background(a, 20)
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            obj = await eventually(
                lambda: settled_in(pg_dsn, response_id), timeout=scaled(30), interval=0.2, what="the sweep"
            )
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        assert obj["status"] == "failed" and obj["error"]["code"] == "owner_lost", obj
        assert sum(SETTLED in line for line in b.log) == 1, b.log[-20:]
        rest = await asyncio.to_thread(lambda: list(stream))
        assert rest[-1].type == "response.failed" and rest[-1].response.error.code == "owner_lost"
        seen = [int(e.sequence_number) for e in before + rest]
        assert seen == list(range(len(seen)))
        told = await asyncio.to_thread(client(a).responses.retrieve, response_id)
        assert told.status == "failed" and told.error.code == "owner_lost"
        assert await stored(pg_dsn, response_id) == obj
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(a.proc.pid, signal.SIGCONT)
        a.stop()
        b.stop()


async def test_sweeping_instances_leave_a_live_owners_response_alone(tmp_path: Path, pg_dsn: str) -> None:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b: Server | None = None
    try:
        response_id, _before, stream = await start_background(a, 5)
        stream.close()
        b = start_server(tmp_path / "b", config=CONFIG, env=env)  # sweeps at start, every 1.5 s
        obj = await eventually(
            lambda: settled_in(pg_dsn, response_id), timeout=scaled(60), interval=0.2, what="the end"
        )
        assert obj["status"] == "completed", obj
        assert not any(SETTLED in line for line in a.log + b.log), b.log[-20:]
        told = await asyncio.to_thread(client(b).responses.retrieve, response_id)
        assert told.status == "completed" and told.output_text.startswith("t0 t1")
    finally:
        a.stop()
        if b is not None:
            b.stop()
