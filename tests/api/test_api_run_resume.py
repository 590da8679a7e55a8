"""A run's event stream continues across a ``kill -9`` and restart of its server, read back from
the session's event log (docs/reference/api-server.md#resume-after-a-restart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from tests.api.api_helpers import Server, call, parse_sse, start_server
from tests.api.conftest import BASE_CONFIG
from tests.api.stored_log import stored_turn
from tests.api.test_api_run_gaps import same_events
from tests.chaos import sqlite_storage
from tests.timing import scaled

SLOW = "[[tokens 400]] [[delay 25]] go"


async def read_until(server: Server, run_id: str, cursor: int, count: int) -> list[dict[str, Any]]:
    """Stream the run's events after ``cursor`` and return the first ``count`` numbered ones."""
    got: list[dict[str, Any]] = []
    headers = {**server.auth(), "Last-Event-ID": str(cursor)}
    timeout = aiohttp.ClientTimeout(total=scaled(60))
    async with (
        aiohttp.ClientSession(timeout=timeout) as client,
        client.get(f"{server.base}/v1/runs/{run_id}/events", headers=headers) as resp,
    ):
        assert resp.status == 200
        buffer = ""
        async for chunk in resp.content.iter_any():
            buffer += chunk.decode()
            *frames, buffer = buffer.split("\n\n")
            for frame in parse_sse("\n\n".join(frames) + "\n\n") if frames else []:
                if "data" in frame:
                    got.append(frame["data"])
            if sum(1 for f in got if "seq" in f) >= count:
                return got
    return got


def check_continuous(frames: list[dict[str, Any]], cursor: int) -> list[int]:
    """Assert the frames continue ``cursor`` without a gap or a repeat; return their seqs."""
    assert not [f for f in frames if f["event"] == "stream.gap"], frames
    seqs = [int(f["seq"]) for f in frames]
    assert seqs == list(range(cursor + 1, cursor + 1 + len(seqs))), seqs
    return seqs


async def run_resumes_after_kill_9(
    home: Path, storage: dict[str, Any], config: str = BASE_CONFIG, *, shared: bool = False
) -> None:
    """The scenario, on the storage ``config`` names (``storage``: the same for a reader). On
    records shared by instances (PostgreSQL) the restart ends the run ``owner_lost``: nothing
    tells it that it is the instance that ran it (docs/reference/api-server.md#run-bus)."""
    srv = start_server(home, config=config)
    try:
        reply = await call(srv, "POST", "/v1/runs", {"input": SLOW})
        assert reply.status == 202, reply.text
        run_id = reply.json["run_id"]
        session_id = reply.json["session_id"]
        before = await read_until(srv, run_id, 0, 30)
        seen = check_continuous(before, 0)
        assert before[0]["event"] == "run.started" and before[-1]["event"] == "message.delta"
        srv.proc.kill()  # kill -9 mid-turn
        srv.proc.wait(10)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    # What the killed server's log holds of the turn: the client saw no more than that (run.started
    # is seq 1, then one message.delta per stored delta).
    stored = await stored_turn(storage, session_id)
    cursor = seen[-1]
    assert cursor <= 1 + len(stored.deltas), (cursor, stored)
    again = start_server(home, config=config)
    try:
        status = (await call(again, "GET", f"/v1/runs/{run_id}")).json
        assert status["status"] == ("failed" if shared else "interrupted"), status
        assert status["completed"] is False, status
        assert "log" not in status and "terminal_event" not in status
        rest = await call(again, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(cursor)})
        assert rest.status == 200, rest.text
        assert rest.text.rstrip().endswith(": stream closed")
        frames = [f["data"] for f in parse_sse(rest.text) if "data" in f]
        seqs = check_continuous(frames, cursor)  # no gap, no repeat
        end = frames[-1]
        if shared:
            assert end["event"] == "run.failed" and end["error_code"] == "owner_lost", end
        else:
            assert end["event"] == "run.interrupted" and end["interrupted"] is True, end
            assert "before this run settled" in end["error"]
        assert status["last_seq"] == seqs[-1]
        # The cut-off turn's end comes right after the last stored event: every stored delta,
        # then the end (nothing the dead server had not stored, nothing skipped).
        assert end["seq"] == 1 + len(stored.deltas) + 1, (end, stored)
        # Everything the client got before the crash and after it is the run, once: the text
        # of the deltas is what the log stored and what the terminal event reports as output.
        text = "".join(f["delta"] for f in before + frames if f["event"] == "message.delta")
        assert text == end["output"] == stored.text and text
        # From the start, a reader gets the same numbering (the same events as live).
        replayed = await call(again, "GET", f"/v1/runs/{run_id}/events")
        whole = [f["data"] for f in parse_sse(replayed.text) if "data" in f]
        check_continuous(whole, 0)
        assert same_events([{"data": f} for f in whole[: len(before)]], [{"data": f} for f in before])
        assert [f["event"] for f in whole].count(end["event"]) == 1 and whole[-1] == end
        # The cursor at the end: 204; the next turn of the session works.
        path = f"/v1/runs/{run_id}/events"
        at_end = await call(again, "GET", path, headers={"Last-Event-ID": str(seqs[-1])})
        assert at_end.status == 204
        nxt = await call(again, "POST", "/v1/runs", {"input": "next turn", "session_id": session_id})
        assert nxt.status == 202, nxt.text
        done = await call(again, "GET", f"/v1/runs/{nxt.json['run_id']}/events")
        last = [f["data"] for f in parse_sse(done.text) if "data" in f][-1]
        assert last["event"] == "run.completed", last
    finally:
        again.stop()


async def test_run_events_continue_after_kill_9_and_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await run_resumes_after_kill_9(home, sqlite_storage(home))
