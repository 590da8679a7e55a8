"""What budgets add to ``hermes api``'s TTFT at c=1, paired request by request (issue #26's figure).

Starts the fake upstream of ``bench_api.py`` and ``hermes api`` twice, without and with
``bench/budgets-on.toml`` (with ``--base-bin PATH`` also that executable twice: four servers), then
sends one streamed first turn to each in turn, ``rounds`` times, so every off/on pair meets the
same moment of the shared machine's load. Prints per server the median time to the first delta
and the server's CPU per request, and per build what budgets add: the median of the per-round
differences, the difference of the medians, and CPU per request (user + sys of the process; 10 ms
ticks, so many rounds).

Storage is PostgreSQL + the Redis bus (the Redis ledger; ``HERMES_TEST_POSTGRES_DSN`` and
``HERMES_TEST_REDIS_URL``, a private schema per server, dropped at the end) unless ``--sqlite``
(the records ledger). ``--scoped-key`` calls the servers with budgets with a tenant's stored key
(``hermes keys create``): the key's lookup, its tenant's claim of each new session and budgets
together, the issue's "scope check and budget reservation".

Run: ``.venv/bin/python bench/bench_budget_pairs.py [--rounds N] [--sqlite] [--scoped-key] [--base-bin P]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_api
import bench_api_ratio
from bench_api import BIN, Target, cpu_s, free_port

HERE = Path(__file__).resolve().parent
POSTGRES = '[storage]\nbackend = "postgres"\n[bus]\nbackend = "redis"\n'


async def main(rounds: int, sqlite: bool, base_bin: Path | None, scoped: bool = False) -> None:
    on = (HERE / "budgets-on.toml").read_text(encoding="utf-8")
    builds: dict[str, tuple[Path, str]] = {}
    if base_bin is not None:
        builds.update({"base": (base_bin, ""), "base+cfg": (base_bin, on)})
    builds.update({"hermes": (BIN, ""), "hermes+cfg": (BIN, on)})
    dsn = os.environ.get("HERMES_TEST_POSTGRES_DSN", "")
    url = os.environ.get("HERMES_TEST_REDIS_URL", "")
    if not sqlite and (not dsn or not url):
        sys.exit("bench_budget_pairs: set HERMES_TEST_POSTGRES_DSN and HERMES_TEST_REDIS_URL (or --sqlite)")
    fake_port = free_port()
    fake = subprocess.Popen([sys.executable, str(HERE / "bench_api.py"), "--fake", str(fake_port)])
    schemas: list[str] = []
    procs: list[subprocess.Popen[str]] = []
    targets: dict[str, tuple[Target, int]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, (binary, extra) in builds.items():
                env: dict[str, str] = {}
                config = extra
                if not sqlite:
                    env = {
                        "HERMES_REDIS_URL": url,
                        "HERMES_POSTGRES_DSN": await bench_api_ratio._schema(dsn, schemas),
                    }
                    config = POSTGRES + "\n" + extra
                home = Path(tmp) / name.replace("+", "_")
                proc, port = bench_api_ratio.start_hermes(home, fake_port, config, env, binary)
                procs.append(proc)
                key = bench_api_ratio.KEY
                if scoped and name.endswith("+cfg"):
                    key = bench_api_ratio.scoped_key(home, env, binary)
                targets[name] = (
                    Target(f"http://127.0.0.1:{port}{bench_api_ratio.PATH}", key, "fake:"),
                    proc.pid,
                )
            try:
                for target, _ in targets.values():  # warm up: imports, pooled connections
                    await bench_api.ttft(target, 1, 30)
                ttft: dict[str, list[float]] = {name: [] for name in targets}
                cpu = dict.fromkeys(targets, 0.0)
                before = bench_api_ratio.load()
                for _ in range(rounds):
                    for name, (target, pid) in targets.items():
                        used = cpu_s(pid)
                        ttft[name] += await bench_api.ttft(target, 1, 1)
                        cpu[name] += cpu_s(pid) - used
                after = bench_api_ratio.load()
            finally:
                for target, _ in targets.values():
                    await target.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        fake.terminate()
        fake.wait(10)
        if schemas:
            import psycopg

            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
                for schema in schemas:
                    await admin.execute(f"DROP SCHEMA {schema} CASCADE")
    storage = "SQLite (records ledger)" if sqlite else "PostgreSQL + Redis bus (Redis ledger)"
    print(f"hermes api on {storage}; {rounds} rounds; load average before {before}, after {after}")
    what = "a tenant's stored key and budgets" if scoped else "budgets"
    for name in targets:
        median, per = statistics.median(ttft[name]), cpu[name] * 1000 / rounds
        print(f"  {name:<11} TTFT c=1 median {median:6.2f} ms, CPU per request {per:5.2f} ms")
    for build in ("base", "hermes"):
        if build not in targets:
            continue
        paired = statistics.median(a - b for a, b in zip(ttft[build + "+cfg"], ttft[build], strict=True))
        medians = statistics.median(ttft[build + "+cfg"]) - statistics.median(ttft[build])
        cpu_added = (cpu[build + "+cfg"] - cpu[build]) * 1000 / rounds
        print(
            f"  {what} add ({build}): TTFT median of pairs {paired:+.2f} ms, difference of medians "
            f"{medians:+.2f} ms, CPU per request {cpu_added:+.2f} ms  (budget <= 0.5 ms)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=500, help="requests per server (default 500)")
    parser.add_argument("--sqlite", action="store_true", help="SQLite storage and the records ledger")
    parser.add_argument(
        "--base-bin", type=Path, help="also this hermes executable (e.g. of a worktree of main)"
    )
    parser.add_argument(
        "--scoped-key",
        action="store_true",
        help="call the servers with budgets with a tenant's stored key (hermes keys create): what the "
        "key lookup, the tenant's session claim and budgets add together",
    )
    args = parser.parse_args()
    gc.freeze()  # the load client is the harness: see bench_api.py
    gc.disable()
    asyncio.run(main(args.rounds, args.sqlite, args.base_bin, args.scoped_key))
