"""A background response whose owner was killed (``kill -9``) is settled by the next instance
at start-up, without anyone asking for it: the stored object (what a poller, a dashboard reading
the records or a later ``GET`` sees) is ``failed`` with ``error.code`` ``interrupted`` and the
output the event log holds. A response whose owner lives is never settled by another instance's
sweep (docs/reference/api-server.md#background-responses). SQLite; the PostgreSQL case is in
``tests/postgres/test_pg_background_sweep.py``."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import openai

from tests.api.api_helpers import Server, start_server
from tests.api.conftest import BASE_CONFIG
from tests.timing import eventually, scaled

#: About 10 s of output: the owner is killed long before it ends.
SLOW = "[[tokens 400]] [[delay 25]] go"
CONFIG = (
    BASE_CONFIG
    + """
[bus]
heartbeat_s = 0.5
owner_grace_s = 3
"""
)
RUNNING = ("queued", "in_progress")
SETTLED = "settled failed: its owner is gone"


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=server.key, max_retries=0, timeout=scaled(60))


def stored(home: Path, response_id: str) -> dict[str, Any]:
    """The response object as the SQLite records hold it (no request to any server)."""
    [database] = home.rglob("hermes.sqlite3")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as db:
        row = db.execute(
            "SELECT data FROM records WHERE namespace = 'api.responses' AND key = ?", (response_id,)
        ).fetchone()
    assert row is not None, f"response {response_id} is not stored"
    obj: dict[str, Any] = json.loads(row[0])["object"]
    return obj


async def start_background(server: Server, events: int) -> tuple[str, list[Any]]:
    """Create a slow background response and read its first ``events`` stream events."""
    stream = await asyncio.to_thread(
        client(server).responses.create, model="hermes-agent", input=SLOW, background=True, stream=True
    )

    def take() -> list[Any]:
        got = []
        for event in stream:
            got.append(event)
            if len(got) >= events:
                break
        stream.close()
        return got

    before = await asyncio.to_thread(take)
    return before[0].response.id, before


async def test_a_killed_owners_response_is_settled_at_start_up_without_a_reader(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a = start_server(home, config=CONFIG)
    try:
        response_id, before = await start_background(a, 30)
        a.proc.kill()  # kill -9 mid-turn
        a.proc.wait(10)
    finally:
        if a.proc.poll() is None:
            a.proc.kill()
    assert stored(home, response_id)["status"] in RUNNING  # nobody settled it yet
    b = start_server(home, config=CONFIG)
    try:

        def settled() -> dict[str, Any] | None:
            obj = stored(home, response_id)
            return obj if obj["status"] not in RUNNING else None

        # No request about the response reaches b: its start-up sweep settles it.
        obj = await eventually(settled, timeout=scaled(20), interval=0.1, what="the start-up settle")
        assert obj["status"] == "failed" and obj["error"]["code"] == "interrupted", obj
        text = "".join(e.delta for e in before if e.type == "response.output_text.delta")
        assert text and obj["output"][0]["content"][0]["text"].startswith(text)
        assert obj["output"][0]["status"] == "incomplete"
        assert sum(SETTLED in line for line in b.log) == 1, b.log[-20:]
        # What a client then reads is that object.
        told = await asyncio.to_thread(client(b).responses.retrieve, response_id)
        assert told.status == "failed" and told.error is not None and told.error.code == "interrupted"
        assert told.output_text == obj["output"][0]["content"][0]["text"]
    finally:
        b.stop()


async def test_another_instances_sweep_leaves_a_live_owners_response_alone(tmp_path: Path) -> None:
    """Two instances on one SQLite home: the second starts (and sweeps, every 1.5 s here) while
    the first runs a background response, which still completes there, untouched."""
    home = tmp_path / "home"
    a = start_server(home, config=CONFIG)
    b: Server | None = None
    try:
        response_id, _before = await start_background(a, 5)
        b = start_server(home, config=CONFIG)
        sdk = client(b)
        running = await asyncio.to_thread(sdk.responses.retrieve, response_id)
        assert running.status in RUNNING  # asked on b: its owner lives, left alone

        def ended() -> dict[str, Any] | None:
            obj = stored(home, response_id)
            return obj if obj["status"] not in RUNNING else None

        obj = await eventually(ended, timeout=scaled(60), interval=0.2, what="the response to end")
        assert obj["status"] == "completed", obj
        assert not any(SETTLED in line for line in a.log + b.log), b.log[-20:]
        told = await asyncio.to_thread(sdk.responses.retrieve, response_id)
        assert told.status == "completed" and told.output_text.startswith("t0 t1")
    finally:
        a.stop()
        if b is not None:
            b.stop()
