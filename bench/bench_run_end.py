"""What "stored before shown" costs a run, paired against another ``hermes`` (e.g. main's).

Starts this checkout's ``hermes api`` and, with ``--base-bin PATH``, another one, each on its own
SQLite home with the mock model, and runs ``POST /v1/runs`` + ``GET /v1/runs/{id}/events`` at
c=1, alternating between the servers run by run so the machine's load falls on both alike. Per
server: time to the first ``message.delta`` (from the POST), time from the last delta to the
terminal event (what waiting for the turn's end to be stored adds), and the server's CPU time
(user+sys) per run. Prints the medians and p90s, and the load average before and after.

Run: ``.venv/bin/python bench/bench_run_end.py [--runs 60] [--base-bin /path/to/hermes]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_api import BIN, cpu_s, free_port, pct

KEY = "sk-bench-run-end-0123456789abcdef"
PROMPT = "[[tokens 20]] bench"


def start(binary: Path, home: Path) -> tuple[subprocess.Popen[bytes], int]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('model = "mock:echo"\n[titles]\nrefine = false\n')
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI", "ANTHROPIC"))
    }
    env.update(HERMES_HOME=str(home), API_SERVER_KEY=KEY)
    proc = subprocess.Popen(
        [str(binary), "api", "--port", str(port)],
        env=env,
        cwd=str(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port


async def wait_up(http: aiohttp.ClientSession, port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            async with http.get(f"http://127.0.0.1:{port}/health") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit(f"server on {port} did not start")


async def one_run(http: aiohttp.ClientSession, port: int) -> tuple[float, float]:
    """Return (time to the first delta, time from the last delta to the terminal event)."""
    base = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    async with http.post(f"{base}/v1/runs", json={"input": PROMPT}) as resp:
        run_id = (await resp.json())["run_id"]
    first = last = end = 0.0
    async with http.get(f"{base}/v1/runs/{run_id}/events") as resp:
        buffer = ""
        async for chunk in resp.content.iter_any():
            now = time.perf_counter()
            buffer += chunk.decode()
            *frames, buffer = buffer.split("\n\n")
            for frame in frames:
                for line in frame.splitlines():
                    if not line.startswith("data: "):
                        continue
                    event = json.loads(line[6:])["event"]
                    if event == "message.delta":
                        first = first or now
                        last = now
                    elif event.startswith("run.") and event != "run.started":
                        end = now
            if end:
                break
    return first - t0, end - last


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60, help="runs per server")
    parser.add_argument("--base-bin", type=Path, help="another hermes executable to pair with")
    args = parser.parse_args()
    servers = {"this": BIN} | ({"base": args.base_bin} if args.base_bin else {})
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        procs = {name: start(binary, Path(tmp) / name) for name, binary in servers.items()}
        headers = {"Authorization": f"Bearer {KEY}"}
        try:
            async with aiohttp.ClientSession(headers=headers) as http:
                for _proc, port in procs.values():
                    await wait_up(http, port)
                for _proc, port in procs.values():  # warm-up
                    for _ in range(3):
                        await one_run(http, port)
                ttft: dict[str, list[float]] = {n: [] for n in procs}
                tail: dict[str, list[float]] = {n: [] for n in procs}
                cpu: dict[str, float] = {n: 0.0 for n in procs}
                for _ in range(args.runs):
                    for name, (proc, port) in procs.items():
                        before = cpu_s(proc.pid)
                        first, end = await one_run(http, port)
                        cpu[name] += cpu_s(proc.pid) - before
                        ttft[name].append(first * 1000)
                        tail[name].append(end * 1000)
        finally:
            for proc, _port in procs.values():
                proc.terminate()
                proc.wait(10)
    print(f"load average after:  {os.getloadavg()}")
    print(
        f"{'server':<6} {'first delta ms p50/p90':>24} {'last delta→end ms p50/p90':>28} {'CPU ms/run':>11}"
    )
    for name in procs:
        a, b = ttft[name], tail[name]
        print(
            f"{name:<6} {statistics.median(a):>12.2f} / {pct(a, 0.9):>8.2f} "
            f"{statistics.median(b):>15.2f} / {pct(b, 0.9):>8.2f} {cpu[name] * 1000 / args.runs:>11.2f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
