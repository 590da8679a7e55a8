"""Profile ``hermes api`` while it serves bursts of 50 first turns at once (issue #30).

Starts the fake upstream of ``bench_api.py`` and one ``hermes api`` (SQLite; ``--postgres``:
PostgreSQL storage and the Redis run bus, as ``bench_api_ratio.py --postgres``), warms them up,
then records the server with py-spy (``pip install py-spy``; it needs ptrace rights over the
server process) while the bursts run, and prints the functions with the most samples on the
event-loop thread: self time, and inclusive time for the frames named with ``--focus``.
``--out FILE`` keeps the collapsed stacks (flamegraph input). ``--streams N`` profiles the
per-token path instead: rounds of N streams of 50 deltas (``--deltas``) at 50 tok/s, CPU per 1000 tokens.
Not a test.

Run: ``.venv/bin/python bench/profile_api_burst.py [--bursts 40] [--concurrency 50] [--streams 200]
[--postgres] [--gc] [--out stacks.txt]``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_api
from bench_api_ratio import KEY, PATH, _schema, burst, start_hermes, streams

#: Extra py-spy flags (``--gil``: only samples holding the GIL, near CPU time on a loaded machine).
SPY_FLAGS: list[str] = []
#: Extra environment of the server (``--env``).
SERVER_ENV: dict[str, str] = {}


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of the server's threads, by kind: the loop, the SQLite thread, the
    executor, the rest."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        kind = (
            "loop"
            if task.name == str(pid)
            else "sqlite"
            if "sqlite" in name
            else "executor"
            if "tool" in name
            else "other"
        )
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def summarize(stacks: Path, top: int, focus: list[str]) -> None:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        if "MainThread" not in frames[0]:
            continue  # the loop thread only: worker threads do not serialize requests
        total += n
        own[frames[-1]] += n
        for name in {f for f in frames if any(key in f for key in focus)}:
            inclusive[name] += n
    print(f"{total} samples on the loop thread")
    print("-- self --")
    for name, n in own.most_common(top):
        print(f"{n / total:6.1%}  {name}")
    print("-- inclusive (focus) --")
    for name, n in inclusive.most_common(top):
        print(f"{n / total:6.1%}  {name}")


async def main(
    bursts: int,
    out: Path | None,
    top: int,
    focus: list[str],
    binary: Path,
    spy_on: bool,
    stream_count: int = 0,
    postgres: bool = False,
    deltas: int = 50,
    gc_stats: bool = False,
    concurrency: int = 50,
) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    config, env, schemas, dsn = "", {}, [], ""
    if postgres:
        dsn = os.environ.get("HERMES_TEST_POSTGRES_DSN", "")
        url = os.environ.get("HERMES_TEST_REDIS_URL", "")
        if not dsn or not url:
            sys.exit("profile_api_burst --postgres: set HERMES_TEST_POSTGRES_DSN and HERMES_TEST_REDIS_URL")
        config = '[storage]\nbackend = "postgres"\n[bus]\nbackend = "redis"\n'
        env = {"HERMES_REDIS_URL": url, "HERMES_POSTGRES_DSN": await _schema(dsn, schemas)}
    try:
        await _profile(
            bursts,
            out,
            top,
            focus,
            binary,
            spy_on,
            stream_count,
            deltas,
            spy,
            config,
            env,
            gc_stats,
            concurrency,
        )
    finally:
        if schemas:
            import psycopg

            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
                for schema in schemas:
                    await admin.execute(f"DROP SCHEMA {schema} CASCADE")


async def gc_totals(pid: int, path: Path) -> dict[str, Any]:
    """Ask the server for its collector totals so far (``bench/gc_site``) and return them."""
    seen = json.loads(path.read_text())["seq"] if path.exists() else 0
    os.kill(pid, signal.SIGUSR1)
    for _ in range(500):
        if path.exists():
            totals: dict[str, Any] = json.loads(path.read_text())
            if totals["seq"] > seen:
                return totals
        await asyncio.sleep(0.01)
    raise RuntimeError("the server did not report its collections (is bench/gc_site on its path?)")


def print_gc(before: dict[str, Any], after: dict[str, Any], count: float) -> None:
    """Print the collections of each generation between two totals."""
    parts = []
    for gen in range(3):
        n = after["count"][gen] - before["count"][gen]
        ms = after["ms"][gen] - before["ms"][gen]
        freed = after["freed"][gen] - before["freed"][gen]
        cpu = after["cpu_ms"][gen] - before["cpu_ms"][gen]
        parts.append(
            f"gen{gen} {n} x, {ms:.0f} ms ({cpu:.0f} ms CPU), freed {freed} (longest since start "
            f"{after['max_ms'][gen]:.1f} ms, {after['max_cpu_ms'][gen]:.1f} ms CPU)"
        )
    total = sum(after["ms"][g] - before["ms"][g] for g in range(3))
    cpu_total = sum(after["cpu_ms"][g] - before["cpu_ms"][g] for g in range(3))
    print("gc: " + "; ".join(parts))
    print(f"gc per unit: {total / count:.3f} ms, {cpu_total / count:.3f} ms CPU")


async def _profile(
    bursts: int,
    out: Path | None,
    top: int,
    focus: list[str],
    binary: Path,
    spy_on: bool,
    stream_count: int,
    deltas: int,
    spy: str,
    config: str,
    env: dict[str, str],
    gc_stats: bool = False,
    concurrency: int = 50,
) -> None:
    fake_port = bench_api.free_port()
    fake = subprocess.Popen([sys.executable, bench_api.__file__, "--fake", str(fake_port)])
    with tempfile.TemporaryDirectory() as tmp:
        gc_file = Path(tmp) / "gc.json"
        if gc_stats:
            site = str(Path(__file__).resolve().parent / "gc_site")
            env = {**env, "PYTHONPATH": site, "GC_PROBE_FILE": str(gc_file)}
        proc, port = start_hermes(Path(tmp) / "home", fake_port, config, {**env, **SERVER_ENV}, binary)
        hermes = bench_api.Target(f"http://127.0.0.1:{port}{PATH}", KEY, "fake:")
        stacks = out or Path(tmp) / "stacks.txt"
        try:
            await asyncio.sleep(1.0)
            for _ in range(3):
                await burst(hermes, 50)
            recorder = None
            if spy_on:
                recorder = subprocess.Popen(
                    [spy, "record", "--pid", str(proc.pid), "--rate", "1000", "--format", "raw",
                     "--threads", "--nonblocking", *SPY_FLAGS, "--output", str(stacks)],
                    stdout=subprocess.DEVNULL,
                )  # fmt: skip
                await asyncio.sleep(1.0)
            gc0 = await gc_totals(proc.pid, gc_file) if gc_stats else None
            cpu0 = thread_cpu(proc.pid)
            started = time.perf_counter()
            p95 = []
            for _ in range(bursts):
                if stream_count:  # the per-token path: N streams of D deltas 20 ms apart
                    p95.append((await streams(hermes, stream_count, deltas, 20, None))["ttft_p99"])
                else:
                    p95.append(bench_api.pct(await burst(hermes, concurrency), 0.95))
            wall = time.perf_counter() - started
            cpu1 = thread_cpu(proc.pid)
            gc1 = await gc_totals(proc.pid, gc_file) if gc_stats else None
            if recorder is not None:
                recorder.send_signal(2)
                recorder.wait(30)
        finally:
            await hermes.close()
            proc.terminate()
            proc.wait(30)
            fake.terminate()
            fake.wait(10)
        median = sorted(p95)[len(p95) // 2]
        if stream_count:
            print(f"{bursts} rounds of {stream_count} streams in {wall:.1f} s", end="; ")
            print(f"TTFT p99 median {median:.1f} ms")
            unit, count = "1000 tokens", bursts * stream_count * deltas / 1000
        else:
            print(
                f"{bursts} bursts of {concurrency} in {wall:.1f} s; TTFT p95 per burst median {median:.1f} ms"
            )
            unit, count = "request", bursts * concurrency
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; server CPU per {unit} (ms):")
        per = {k: (cpu1.get(k, 0.0) - cpu0.get(k, 0.0)) * 1000 / count for k in sorted(cpu1)}
        print("  " + "  ".join(f"{k} {v:.3f}" for k, v in per.items()) + f"  total {sum(per.values()):.3f}")
        if gc0 is not None and gc1 is not None:
            print_gc(gc0, gc1, count)
        if spy_on:
            summarize(stacks, top, focus)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bursts", type=int, default=40)
    parser.add_argument(
        "--concurrency", type=int, default=50, metavar="C", help="first turns per burst (1: one at a time)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--focus",
        nargs="*",
        default=["create_chat_completion", "open_session", "submit", "place", "choose_model", "stream ("],
    )
    parser.add_argument("--bin", type=Path, default=bench_api.BIN, help="the hermes executable to run")
    parser.add_argument(
        "--deltas",
        type=int,
        default=50,
        metavar="D",
        help="deltas per stream with --streams (runs at two lengths tell the cost of a token from "
        "the cost of a request: (CPU at D2 - CPU at D1) / (D2 - D1) per stream)",
    )
    parser.add_argument("--no-spy", action="store_true", help="only the per-thread CPU, no py-spy")
    parser.add_argument(
        "--streams",
        type=int,
        default=0,
        metavar="N",
        help="instead of bursts: rounds (--bursts) of N streams of 50 deltas at 50 tok/s, all at once; "
        "CPU is reported per 1000 streamed tokens",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="hermes on PostgreSQL storage + the Redis run bus "
        "(HERMES_TEST_POSTGRES_DSN, HERMES_TEST_REDIS_URL)",
    )
    parser.add_argument(
        "--gc",
        action="store_true",
        help="also report the server's garbage collections during the bursts (bench/gc_site)",
    )
    parser.add_argument(
        "--gil",
        action="store_true",
        help="py-spy samples only the thread holding the GIL: CPU rather than wall time (waiting for "
        "a core, a socket or the database is left out)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set this in the server's environment (e.g. HERMES_GC_THRESHOLD=5000,10,10; HERMES_ "
        "variables are otherwise not passed on)",
    )
    args = parser.parse_args()
    SERVER_ENV.update(item.split("=", 1) for item in args.env)
    if args.gil:
        SPY_FLAGS.append("--gil")
    asyncio.run(
        main(
            args.bursts,
            args.out,
            args.top,
            args.focus,
            args.bin,
            not args.no_spy,
            args.streams,
            args.postgres,
            args.deltas,
            args.gc,
            args.concurrency,
        )
    )
