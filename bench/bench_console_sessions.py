"""What a console call pays to look its session up in the API server's records (no cache: one
primary-key read per call, so a sign-out on any instance is honoured at once).

Times ``ConsoleSessions.get`` (hash the cookie, read the record, check the principal) in the
kernel's records on SQLite and, when a DSN is given, on shared PostgreSQL; the in-memory
dictionary the console used before is the baseline. Prints median and p95 per lookup; not a test.

Run: ``python bench/bench_console_sessions.py [--n 2000] [--dsn postgresql://…]`` (the DSN
defaults to ``HERMES_TEST_POSTGRES_DSN``; PostgreSQL is skipped without one).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from hermes_api_server.console.auth import ConsoleSessions  # noqa: E402
from tests.api.records_world import api_records  # noqa: E402

PRINCIPAL = "principal:bench"


def _row(label: str, samples: list[float]) -> str:
    samples.sort()
    median = statistics.median(samples) * 1e6
    p95 = samples[int(len(samples) * 0.95)] * 1e6
    return f"{label:<38} {median:>9.0f} µs {p95:>9.0f} µs"


async def _lookups(records: Any, n: int) -> list[float]:
    table = ConsoleSessions(records, frozenset({PRINCIPAL}), 3600)
    tokens = [(await table.open(PRINCIPAL))[0] for _ in range(50)]  # a table with neighbours
    samples = []
    for i in range(n):
        token = tokens[i % len(tokens)]
        t0 = time.perf_counter()
        found = await table.get(token)
        samples.append(time.perf_counter() - t0)
        assert found is not None
    for token in tokens:
        await table.close(token)
    return samples


def _memory(n: int) -> list[float]:
    """The former in-memory table: a hash and a dict lookup."""
    ends = time.time() + 3600
    table = {hashlib.sha256(str(i).encode()).hexdigest(): (PRINCIPAL, "csrf", ends) for i in range(50)}
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        found = table.get(hashlib.sha256(str(i % 50).encode()).hexdigest())
        samples.append(time.perf_counter() - t0)
        assert found is not None
    return samples


async def main(n: int, dsn: str | None) -> None:
    print(f"console session lookup, {n} calls           median        p95")
    print(_row("in memory (before)", _memory(n)))
    with tempfile.TemporaryDirectory() as tmp:
        async with api_records("sqlite", Path(tmp) / "hermes.sqlite3") as (store,):
            print(_row("SQLite (kernel records)", await _lookups(store, n)))
    if not dsn:
        print("PostgreSQL: skipped (give --dsn or HERMES_TEST_POSTGRES_DSN)")
        return
    async with api_records("postgres", dsn) as (pg,):
        print(_row("PostgreSQL (kernel records)", await _lookups(pg, n)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--dsn", default=os.environ.get("HERMES_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    asyncio.run(main(args.n, args.dsn))
