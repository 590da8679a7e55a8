"""A scenario's faults on the API server's SSE streams: drop, duplicate, delay, restart
(docs/reference/scenarios.md#faults). Each test runs ``hermes api`` with a scenario; the client
reconnects to ``/v1/runs/{id}/events`` with ``Last-Event-ID`` the way a host would."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api.api_helpers import Server, start_server
from tests.timing import eventually

STEPS = """
[[turns]]
user = "go"
  [[turns.steps]]
  chunks = [
    { text = "a", delay_ms = 60 }, { text = "b", delay_ms = 60 },
    { text = "c", delay_ms = 60 }, { text = "d", delay_ms = 60 },
  ]
"""
CONFIG = "[agent]\nprovider_retries = 0\n[titles]\nrefine = false\n"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[Server] = []

    def start(faults: str) -> Server:
        path = tmp_path / "faulty.toml"
        path.write_text(STEPS + faults, encoding="utf-8")
        server = start_server(tmp_path / "home", config=CONFIG, env={"HERMES_MODEL": f"mock:scenario:{path}"})
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


async def _start_run(http: aiohttp.ClientSession, server: Server) -> str:
    async with http.post(f"{server.base}/v1/runs", json={"input": "go"}, headers=server.auth()) as reply:
        assert reply.status == 202, await reply.text()
        return str((await reply.json())["run_id"])


async def _read_events(
    http: aiohttp.ClientSession, server: Server, run_id: str, last: int | None = None
) -> tuple[list[dict[str, Any]], list[str], bool]:
    """Read a run's event stream; return the events, the raw frames and whether it was cut."""
    headers = server.auth() | ({"Last-Event-ID": str(last)} if last is not None else {})
    events: list[dict[str, Any]] = []
    frames: list[str] = []
    cut = False
    async with http.get(f"{server.base}/v1/runs/{run_id}/events", headers=headers) as reply:
        assert reply.status == 200, await reply.text()
        buffer = ""
        try:
            async for piece in reply.content.iter_any():
                buffer += piece.decode("utf-8")
                while "\n\n" in buffer:
                    frame, buffer = buffer.split("\n\n", 1)
                    frames.append(frame)
                    for line in frame.splitlines():
                        if line.startswith("data: "):
                            events.append(json.loads(line[6:]))
        except aiohttp.ClientPayloadError:
            cut = True
    return events, frames, cut


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("delta", "") for e in events if e["event"] == "message.delta")


async def test_drop_cuts_the_stream_and_last_event_id_resumes_it(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "api"\naction = "drop"\nafter_frames = 2\n')
    async with aiohttp.ClientSession() as http:
        run_id = await _start_run(http, server)
        first, _, cut = await _read_events(http, server, run_id)
        assert cut and len(first) == 2
        rest, _, cut_again = await _read_events(http, server, run_id, last=first[-1]["seq"])
    assert not cut_again
    seqs = [e["seq"] for e in first + rest]
    assert seqs == list(range(1, len(seqs) + 1))  # nothing lost, nothing repeated
    assert rest[-1]["event"] == "run.completed"
    assert rest[-1]["output"] == "abcd"


async def test_duplicate_repeats_one_frame(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "api"\naction = "duplicate"\nafter_frames = 1\n')
    async with aiohttp.ClientSession() as http:
        run_id = await _start_run(http, server)
        events, _, cut = await _read_events(http, server, run_id)
    assert not cut
    assert events[1] == events[2]
    assert [e["seq"] for e in events[2:]] == list(range(2, len(events)))


async def test_delay_holds_one_frame_back(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "api"\naction = "delay"\ndelay_ms = 800\nafter_frames = 0\n')
    async with aiohttp.ClientSession() as http:
        run_id = await _start_run(http, server)
        started = time.monotonic()
        events, _, cut = await _read_events(http, server, run_id)
    assert time.monotonic() - started >= 0.8
    assert not cut and events[0]["seq"] == 1 and events[-1]["event"] == "run.completed"


async def test_restart_really_restarts_the_process_and_the_run_is_read_from_the_log(serve: Any) -> None:
    server = serve('[[faults]]\ntransport = "api"\naction = "restart"\ndelay_ms = 500\nafter_frames = 2\n')
    async with aiohttp.ClientSession() as http:
        run_id = await _start_run(http, server)
        first, _, cut = await _read_events(http, server, run_id)
        assert cut and len(first) == 2

        async def back() -> list[dict[str, Any]] | None:
            try:
                rest, _, _ = await _read_events(http, server, run_id, last=first[-1]["seq"])
            except aiohttp.ClientConnectionError:  # nobody listens while it restarts
                return None
            return rest

        rest = await eventually(back, timeout=20, what="the server to listen again")
    # A new process image (the same pid, exec'd): it started and listened a second time, and the
    # run it finished before restarting is read back from the storage.
    assert any("restarting the process" in line for line in server.log)
    assert sum("Hermes API server listening on" in line for line in server.log) == 2, server.log
    assert server.proc.poll() is None
    assert rest[-1]["event"] == "run.completed" and rest[-1]["output"] == "abcd"
    seqs = [e["seq"] for e in first] + [e["seq"] for e in rest]
    assert seqs == sorted(set(seqs)), seqs  # nothing twice, in order
