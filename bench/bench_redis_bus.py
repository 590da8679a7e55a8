"""Redis run-bus budgets (docs/deploy.md): events through one stream end to end, resuming a stream
on another instance, and a stop posted to a non-owner.

Run against a Redis you may write to (its keys under ``hermes:`` are used):
``HERMES_REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/python bench/bench_redis_bus.py``.
``HERMES_TEST_REDIS_URL`` (what ``.ci/run`` exports) works too. The instance figures use two real
``hermes api`` processes on one SQLite file and the offline mock model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugins"))

KEY = "hk_" + secrets.token_urlsafe(32)
HERMES = shutil.which("hermes", path=str(Path(sys.executable).parent)) or "hermes"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def stream_throughput(url: str, events: int) -> tuple[float, float]:
    """Events/s from the owner's publish to a second client's XREAD of the last one, and the CPU
    time this process (owner and reader) spent per event, in microseconds."""
    from hermes_core import RunStatus
    from hermes_redis.bus import RedisRunBus

    async def nothing(command: str, run_id: str, args: dict[str, Any]) -> dict[str, Any]:
        return {}

    owner = RedisRunBus(url, instance_id="bench-owner", heartbeat_s=1.0, journal_events=events + 10)
    reader = RedisRunBus(url, instance_id="bench-reader", heartbeat_s=1.0)
    await owner.start(nothing)
    await reader.start(nothing)
    run_id = "run_bench_" + secrets.token_hex(6)
    status = json.dumps({"run_id": run_id, "status": "running"})
    owner.claim(run_id, "bench", "bench-session", RunStatus(status, status="running"))
    try:

        async def read_all() -> None:
            cursor = 0
            while cursor < events:
                got = await reader.read(run_id, cursor, 5.0)
                if got:
                    cursor = got[-1][0]

        follower = asyncio.create_task(read_all())
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        cpu = time.process_time()
        for seq in range(1, events + 1):
            # The API server encodes each event once (for its own readers); the bus gets that text.
            payload = {"event": "message.delta", "run_id": run_id, "seq": seq, "timestamp": time.time()}
            payload["delta"] = "tok "
            owner.publish(run_id, seq, json.dumps(payload, separators=(",", ":")), seq == events)
            if seq % 1000 == 0:
                await asyncio.sleep(0)  # the owner's loop also serves the writer, as in hermes api
        await follower
        took = time.perf_counter() - started
        cpu = time.process_time() - cpu
    finally:
        await owner.client.delete(f"hermes:run:{run_id}")
        await owner.close()
        await reader.close()
    return events / took, cpu / events * 1e6


def start(home: Path, config: str, url: str) -> tuple[subprocess.Popen[str], str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_REDIS_URL=url, API_SERVER_KEY=KEY)
    proc = subprocess.Popen(
        [HERMES, "api", "--port", "0"], env=env, cwd=str(home), stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
            return proc, f"http://127.0.0.1:{port}"
    raise SystemExit("hermes api did not start")


async def new_run(client: aiohttp.ClientSession, base: str, text: str) -> str:
    async with client.post(f"{base}/v1/runs", json={"input": text}) as resp:
        assert resp.status == 202, await resp.text()
        return str((await resp.json())["run_id"])


async def first_event_ms(client: aiohttp.ClientSession, base: str, run_id: str, cursor: int) -> float:
    started = time.perf_counter()
    headers = {"Last-Event-ID": str(cursor)}
    async with client.get(f"{base}/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status == 200
        async for line in resp.content:
            if line.startswith(b"id: "):
                assert int(line[4:]) == cursor + 1
                return (time.perf_counter() - started) * 1000
    raise AssertionError("no event")


async def stop_ms(client: aiohttp.ClientSession, a: str, b: str) -> float:
    run_id = await new_run(client, a, "[[tokens 2000]] [[delay 20]] go")
    async with client.get(f"{b}/v1/runs/{run_id}/events") as resp:
        started = 0.0
        async for line in resp.content:
            if not started and b'"message.delta"' in line:
                started = time.perf_counter()
                async with client.post(f"{b}/v1/runs/{run_id}/stop") as stop:
                    assert stop.status == 200, await stop.text()
            if b'"run.cancelled"' in line:
                return (time.perf_counter() - started) * 1000
    raise AssertionError("no run.cancelled")


async def instances(url: str, resumes: int, stops: int) -> tuple[list[float], list[float]]:
    tmp = Path(tempfile.mkdtemp(prefix="hermes-bench-bus-"))
    config = f"""
[titles]
refine = false
[storage]
path = "{tmp / "shared.sqlite3"}"
[bus]
backend = "redis"
"""
    procs = [start(tmp / name, config, url) for name in ("a", "b")]
    (pa, a), (pb, b) = procs
    headers = {"Authorization": f"Bearer {KEY}"}
    try:
        async with aiohttp.ClientSession(headers=headers) as client:
            run_id = await new_run(client, a, "[[tokens 600]] go")
            while True:
                async with client.get(f"{b}/v1/runs/{run_id}") as resp:
                    status = await resp.json()
                if status.get("status") == "completed":
                    break
                await asyncio.sleep(0.05)
            last = int(status["last_seq"])
            for _ in range(10):
                await first_event_ms(client, b, run_id, 1)
            resume = [
                await first_event_ms(client, b, run_id, random.randrange(1, last)) for _ in range(resumes)
            ]
            stop = [await stop_ms(client, a, b) for _ in range(stops)]
            cpu = [_cpu_s(proc.pid) for proc in (pa, pb)]
        print(f"  CPU (user+sys) of instance a: {cpu[0]:.2f} s, b: {cpu[1]:.2f} s")
    finally:
        for proc in (pa, pb):
            proc.terminate()
            proc.wait(15)
        shutil.rmtree(tmp, ignore_errors=True)
    return resume, stop


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds a running process has used (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--resumes", type=int, default=100)
    parser.add_argument("--stops", type=int, default=30)
    args = parser.parse_args()
    url = os.environ.get("HERMES_REDIS_URL") or os.environ.get("HERMES_TEST_REDIS_URL")
    if not url:
        print("no Redis: set HERMES_REDIS_URL (or run .ci/run, which exports HERMES_TEST_REDIS_URL)")
        return
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared)")
    rate, cpu_us = await stream_throughput(url, args.events)
    print(f"run events through Redis, one stream, publish -> XREAD: {rate:,.0f} events/s (budget >= 20,000)")
    print(f"  CPU of this process (owner and reader) per event: {cpu_us:.1f} us")
    resume, stop = await instances(url, args.resumes, args.stops)
    print(
        f"resume on another instance, Last-Event-ID -> first replayed event: median "
        f"{statistics.median(resume):.2f} ms, p95 {pct(resume, 0.95):.2f} ms (budget <= 20 ms median)"
    )
    print(
        "stop posted to a non-owner -> run.cancelled on the stream: "
        f"median {statistics.median(stop):.1f} ms, p95 {pct(stop, 0.95):.1f} ms (budget <= 100 ms p95)"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
