"""What a burst's first tokens wait for: server CPU per request spent before the last first token.

A burst of N first turns (``--concurrency``, 50) goes to the bare aiohttp relay and to
``hermes api`` (SQLite, or ``--memory``), in alternating rounds. The fake upstream sends each
turn's first token at once and the next ones ``--pause`` ms later (400), so no turn has anything
after its first token to do before the burst's last first token has left: the server's CPU (all
threads, from ``/proc``) between the burst's first request and its last first token is the
burst's work *before* the first token, and nothing else. The same burst's whole CPU (to the end
of every stream) is printed beside it.

Why it matters (issue #30): the c=50 p95 of added time to first token is about this figure times
the concurrency, for the relay and for hermes alike; the budget of 3x the relay's p95 is a
budget on this figure. Not a test; the numbers are noisy on a shared machine, so compare rounds
of the same run, or pair builds with ``--base-bin``.

Run: ``.venv/bin/python bench/bench_first_token_cpu.py [--rounds 20] [--concurrency 50]
[--memory] [--base-bin /other/.venv/bin/hermes]``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_api
from bench_api import Target, cpu_s, free_port, pct
from bench_api_ratio import KEY, PATH, Servers, load, start_hermes

#: Rounds before the measured ones (connections, caches and the loop warmed up).
WARM_ROUNDS = 4


async def _round(target: Target, pid: int, concurrency: int, pause_ms: int) -> tuple[float, float, float]:
    """One burst: (CPU ms per request before the last first token, CPU ms per request in all,
    p95 of the time to first token in ms)."""
    arrived: list[float] = []
    model = f"fake-t3-d{pause_ms}"
    before = cpu_s(pid)
    start = time.perf_counter()
    turns = [
        asyncio.ensure_future(target.stream(None, model, f"burst {time.time_ns()} {i}", arrived=arrived))
        for i in range(concurrency)
    ]
    while len(arrived) < concurrency:
        done, _ = await asyncio.wait(turns, timeout=0.001, return_when=asyncio.FIRST_EXCEPTION)
        for turn in done:
            turn.result()  # a failed turn fails the bench
    at_last_first = cpu_s(pid)
    await asyncio.gather(*turns)
    await asyncio.sleep(0.2)  # the clean-up after the end of the streams
    whole = cpu_s(pid)
    per = 1000 / concurrency
    firsts = [(t - start) * 1000 for t in arrived]
    return (at_last_first - before) * per, (whole - before) * per, pct(firsts, 0.95)


async def run(servers: Servers, rounds: int, concurrency: int, pause_ms: int) -> None:
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in servers}
    for r in range(WARM_ROUNDS + rounds):
        # The order rotates, so a slow phase of the machine does not fall on one server.
        names = list(servers)
        names = names[r % len(names) :] + names[: r % len(names)]
        for name in names:
            target, pid = servers[name]
            burst = await _round(target, pid, concurrency, pause_ms)
            if r >= WARM_ROUNDS:
                results[name].append(burst)
    print(f"{rounds} bursts of {concurrency} per server, load average {load()}")
    header = ("CPU/request before the last first token", "whole request", "first-token p95")
    print(f"{'server':<10} {header[0]:>40} {header[1]:>14} {header[2]:>16}")
    for name, got in results.items():
        # Sums, not medians: /proc counts CPU in 10 ms ticks, so one burst's figure is coarse.
        pre = sum(g[0] for g in got) / len(got)
        whole = sum(g[1] for g in got) / len(got)
        p95 = sorted(g[2] for g in got)[len(got) // 2]
        print(f"{name:<10} {pre:>37.3f} ms {whole:>11.3f} ms {p95:>13.1f} ms")


async def _measure(servers: Servers, rounds: int, concurrency: int, pause_ms: int) -> None:
    await asyncio.sleep(1.0)  # the relay and the fake listening (hermes is up once started)
    try:
        await run(servers, rounds, concurrency, pause_ms)
    finally:
        for target, _ in servers.values():
            await target.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--pause", type=int, default=400, help="ms between a turn's tokens after the first")
    parser.add_argument("--memory", action="store_true", help="hermes on memory storage")
    parser.add_argument("--bin", type=Path, default=bench_api.BIN, help="the hermes executable")
    parser.add_argument("--base-bin", type=Path, help="a second hermes build, measured alike")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    fake_port, relay_port = free_port(), free_port()
    procs: list[subprocess.Popen[Any]] = [
        subprocess.Popen([sys.executable, str(here / "bench_api.py"), "--fake", str(fake_port)]),
        subprocess.Popen(
            [sys.executable, str(here / "bench_api_floor.py"), "--relay", str(relay_port), str(fake_port)]
        ),
    ]
    servers = {"relay": (Target(f"http://127.0.0.1:{relay_port}{PATH}", None, ""), procs[1].pid)}
    extra = '[storage]\nbackend = "memory"\n' if args.memory else ""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            builds = (
                {"hermes": args.bin} if args.base_bin is None else {"base": args.base_bin, "hermes": args.bin}
            )
            for name, binary in builds.items():
                proc, port = start_hermes(Path(tmp) / name, fake_port, extra, {}, binary)
                procs.append(proc)
                servers[name] = (Target(f"http://127.0.0.1:{port}{PATH}", KEY, "fake:"), proc.pid)
            asyncio.run(_measure(servers, args.rounds, args.concurrency, args.pause))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


if __name__ == "__main__":
    main()
