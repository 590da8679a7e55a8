"""A scenario's faults on the TUI gateway over WebSocket: drop, duplicate, delay, restart
(docs/reference/scenarios.md#faults). Each test runs ``hermes tui --ws`` with a scenario and a
real aiohttp client, and reconnects the way a host would (``session.events.since``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.timing import eventually, scaled
from tests.tui.client import WsClient, WsServer

TOKEN = "scenario-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STEPS = """
[[turns]]
user = "go"
  [[turns.steps]]
  chunks = [
    { text = "a", delay_ms = 40 }, { text = "b", delay_ms = 40 },
    { text = "c", delay_ms = 40 }, { text = "d", delay_ms = 40 },
  ]
"""


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[WsServer] = []

    def start(faults: str) -> WsServer:
        path = tmp_path / "faulty.toml"
        path.write_text(STEPS + faults, encoding="utf-8")
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        server = WsServer(home, TOKEN, env={"HERMES_MODEL": f"mock:scenario:{path}"})
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


async def _turn(client: WsClient) -> str:
    await client.wait(lambda: client.frames)  # gateway.ready
    sid = str((await client.call("session.create", {}))["session_id"])
    await client.call("prompt.submit", {"session_id": sid, "text": "go"})
    return sid


def _seqs(client: WsClient, sid: str) -> list[int]:
    return [e["seq"] for e in client.events(sid) if "seq" in e]


async def _catch_up(url: str, sid: str, last_seen: int) -> list[dict[str, Any]]:
    """Reconnect and fetch what was missed, until the turn's message.complete is among it."""
    client = await WsClient.connect(url, headers=AUTH)
    try:
        await client.wait(lambda: client.frames)
        seen: list[dict[str, Any]] = []

        async def complete() -> bool:
            result = await client.call("session.events.since", {"session_id": sid, "last_seen": last_seen})
            seen[:] = result["events"]
            return any(e["type"] == "message.complete" for e in seen) or any(
                e["type"] == "message.complete" for e in client.events(sid)
            )

        await eventually(complete, timeout=15)
        return seen + client.events(sid)
    finally:
        await client.close()


async def test_drop_cuts_the_connection_after_n_frames_and_the_host_catches_up(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "tui"\naction = "drop"\nafter_frames = 5\n')
    client = await WsClient.connect(server.url, headers=AUTH)
    sid = await _turn(client)
    await client.wait_closed(timeout=scaled(15))
    await client.close()
    assert len(client.frames) == 5  # the sixth frame went down with the connection
    assert client.closed_code not in (1000, 1001)  # no close handshake: it looks like a network drop
    last = max(_seqs(client, sid), default=0)
    caught = await _catch_up(server.url, sid, last)
    done = [e for e in caught if e["type"] == "message.complete"]
    assert done[0]["payload"]["text"] == "abcd"
    # A rule fires once: the second connection is not dropped.
    assert any("injecting fault drop" in line for line in server.stderr_lines)


async def test_duplicate_sends_one_frame_twice(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "tui"\naction = "duplicate"\nafter_frames = 2\n')
    client = await WsClient.connect(server.url, headers=AUTH)
    try:
        sid = await _turn(client)
        await client.wait(lambda: client.events(sid, "message.complete"), timeout=scaled(15))
        assert client.frames[2] == client.frames[3]
        assert len({repr(f) for f in client.frames}) == len(client.frames) - 1
    finally:
        await client.close()


async def test_delay_holds_one_frame_back(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "any"\naction = "delay"\ndelay_ms = 700\nafter_frames = 1\n')
    client = await WsClient.connect(server.url, headers=AUTH)
    try:
        await client.wait(lambda: client.frames)
        started = time.monotonic()
        result = await client.call("session.create", {})  # the second frame: held back 700 ms
        assert time.monotonic() - started >= 0.7
        assert result["session_id"]
    finally:
        await client.close()


async def test_restart_really_restarts_the_process_and_the_host_catches_up(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "tui"\naction = "restart"\nafter_frames = 5\ndelay_ms = 500\n')
    client = await WsClient.connect(server.url, headers=AUTH)
    sid = await _turn(client)
    await client.wait_closed(timeout=scaled(15))
    await client.close()
    before = [e for e in client.events(sid) if "seq" in e]
    last = max(_seqs(client, sid), default=0)

    async def back() -> list[dict[str, Any]] | None:
        try:
            return await _catch_up(server.url, sid, last)
        except OSError:  # aiohttp's ClientConnectorError: nobody listens while it restarts
            return None

    caught = await eventually(back, timeout=20, what="the server to listen again")
    assert any("restarting the process" in line for line in server.stderr_lines)
    # A new process image (the same pid, exec'd): it started and listened a second time.
    assert sum("listening on ws://" in line for line in server.stderr_lines) == 2
    assert server.proc.poll() is None
    assert next(e for e in caught if e["type"] == "message.complete")["payload"]["text"] == "abcd"
    # What the host has after catching up: nothing lost, nothing twice.
    after = {e["seq"]: e for e in caught if "seq" in e and e["seq"] > last}
    assert not {e["seq"] for e in before} & set(after)
    shown = before + [after[seq] for seq in sorted(after)]
    assert "".join(e["payload"]["text"] for e in shown if e["type"] == "message.delta") == "abcd"
