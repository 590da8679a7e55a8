"""As an operator would break it (issue 29): three ``hermes api`` behind nginx (the configuration
docs/deploy.md prints) on PostgreSQL and Redis, clients streaming runs in their own conversations
and reconnecting with ``Last-Event-ID`` (so each connection may land on another instance), while
one instance is paused past the grace period and then Redis restarts empty. Afterwards every run
ended once, the same way on every instance and for every client; no seq means two events; every
jump came after a ``stream.gap``; and no conversation holds a completed reply from a run its
client was told had failed."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from pathlib import Path

from tests.api.api_helpers import call
from tests.nginx_front import start_nginx
from tests.redis.fault_world import GRACE, KEY, Tap, World, create_run, one_ending, transcript
from tests.services import nginx_binary
from tests.timing import eventually, scaled

CLIENTS = 6
RUNS_EACH = 2


class Front:
    """nginx in front of the instances; looks like one server to the helpers."""

    def __init__(self, tmp: Path, ports: list[int]) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.proc = start_nginx(nginx_binary(), tmp, ports, self.port)
        self.base = f"http://127.0.0.1:{self.port}"

    def auth(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or KEY}"}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


async def post_run(front: Front, text: str, session_id: str) -> str:
    """Create a run as a patient client: a session still held elsewhere (409) or a bus that is
    away (503) is tried again."""

    async def created() -> str | None:
        reply = await call(front, "POST", "/v1/runs", {"input": text, "session_id": session_id})
        if reply.status in (409, 503) and reply.json["error"]["code"] in (
            "session_in_use",
            "bus_unavailable",
            "run_owner_unavailable",
        ):
            return None
        assert reply.status == 202, reply.text
        return str(reply.json["run_id"])

    run_id: str = await eventually(created, timeout=60, interval=0.2, what=f"a run in {session_id}")
    return run_id


async def test_through_nginx_every_run_ends_once_while_an_instance_stalls_and_redis_restarts(
    world: World, tmp_path: Path
) -> None:
    servers = world.instances(3)
    front = Front(tmp_path / "nginx", [s.port for s in servers])
    try:
        await eventually(lambda: _up(front), timeout=20, interval=0.05, what="nginx")
        runs: list[tuple[str, str, Tap]] = []

        async def client(i: int) -> None:
            for turn in range(RUNS_EACH):
                text = f"[[tokens 30]] [[delay 60]] client {i} turn {turn}"
                run_id = await post_run(front, text, f"conv-{i}")
                tap = Tap(front, run_id, drops=2)
                runs.append((f"conv-{i}", run_id, tap))
                await tap.done()

        clients = [asyncio.create_task(client(i)) for i in range(CLIENTS)]
        await eventually(lambda: sum(t.count("message.delta") for _, _, t in runs) >= CLIENTS, timeout=30)
        stalled = servers[0]
        # One run surely owned by the instance about to stall, followed through nginx too.
        pinned = await create_run(stalled, "[[tokens 200]] [[delay 50]] pinned", "conv-pinned")
        runs.append(("conv-pinned", pinned, Tap(front, pinned, drops=2)))
        await eventually(lambda: runs[-1][2].count("message.delta") >= 1, timeout=30)
        stalled.proc.send_signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(GRACE + 2)  # the fault itself: a pause past the grace period
        finally:
            stalled.proc.send_signal(signal.SIGCONT)
        await world.restart_redis_empty()
        started = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*clients), scaled(120))
        assert time.monotonic() - started < scaled(120)
    finally:
        front.stop()

    assert len(runs) == CLIENTS * RUNS_EACH + 1
    endings: dict[str, str] = {}
    for _, run_id, tap in runs:
        end = await one_ending(servers, run_id, world.dsn, taps=(tap,))
        endings[run_id] = end["event"]
        assert end["event"] == "run.completed" or end.get("error_code") == "owner_lost", end
    assert endings[pinned] == "run.failed"
    for session in [f"conv-{i}" for i in range(CLIENTS)] + ["conv-pinned"]:
        completed = sum(1 for s, run_id, _ in runs if s == session and endings[run_id] == "run.completed")
        rows = await transcript(world.dsn, session)
        replies = [
            meta for role, text, meta in rows if role == "assistant" and text and not meta.get("cut_off")
        ]
        assert len(replies) == completed, (session, rows, endings)


async def _up(front: Front) -> bool:
    try:
        return (await call(front, "GET", "/health")).status == 200
    except OSError:
        return False
