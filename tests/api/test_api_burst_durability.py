"""What a streamed chat completion's ``finish_reason`` promises, under a burst: the turn's user
row and answer are stored, so a ``kill -9`` right after the client saw it loses neither
(docs/reference/api-server.md#chat-completions). The SQLite writer commits a burst's rows in
shared transactions (group commit); none of them may be acknowledged before its commit."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from pathlib import Path

import aiohttp

from tests.api.api_helpers import start_server
from tests.api.conftest import BASE_CONFIG

STREAMS = 30


async def _stream(
    client: aiohttp.ClientSession, base: str, key: str, i: int, finished: dict[int, str], kill: asyncio.Event
) -> None:
    body = {
        "stream": True,
        "messages": [{"role": "user", "content": f"burst {i} [[tokens 3]]"}],
    }
    headers = {"Authorization": f"Bearer {key}"}
    try:
        async with client.post(f"{base}/v1/chat/completions", json=body, headers=headers) as reply:
            assert reply.status == 200, await reply.text()
            session_id = reply.headers["X-Hermes-Session-Id"]
            async for line in reply.content:
                if not line.startswith(b"data: {"):
                    continue
                chunk = json.loads(line[6:])
                if any(c.get("finish_reason") for c in chunk.get("choices", [])):
                    finished[i] = session_id
                    kill.set()
                    return
    except (aiohttp.ClientError, ConnectionError):
        pass  # killed mid-stream: this one promised nothing


async def test_rows_acknowledged_by_finish_reason_survive_a_kill_in_a_burst(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = start_server(home, config=BASE_CONFIG + f"[api_server]\nmax_concurrent_runs = {STREAMS}\n")
    finished: dict[int, str] = {}
    kill = asyncio.Event()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as client:
            tasks = [
                asyncio.create_task(_stream(client, server.base, server.key, i, finished, kill))
                for i in range(STREAMS)
            ]
            waiting = asyncio.ensure_future(kill.wait())
            await asyncio.wait([waiting, *tasks], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            for task in tasks:
                if task.done():
                    task.result()  # a request that failed fails the test here
            # Killed as soon as the first finish_reason is read: the others are mid-turn, some
            # of their rows queued or in a group transaction that never commits.
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
            seen = dict(finished)  # what the clients were told before the kill
            await asyncio.gather(*tasks)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(10)
    assert seen
    with sqlite3.connect(home / "hermes.sqlite3") as db:
        for i, session_id in seen.items():
            stored = db.execute(
                "SELECT role, content FROM messages WHERE session_id = ? AND role IN ('user', 'assistant')"
                " ORDER BY position, id",
                (session_id,),
            ).fetchall()
            roles = [role for role, _ in stored]
            assert roles == ["user", "assistant"], (i, stored)
            assert f"burst {i}" in stored[0][1]
            assert stored[1][1], stored
