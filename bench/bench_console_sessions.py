"""What a console call pays to look its session up in the API server's records (no cache: one
primary-key read per call, so a sign-out on any instance is honoured at once).

Times ``ConsoleSessions.get`` (hash the cookie, read the row, check the principal) on the
instance's SQLite file and, when a DSN is given, on the shared PostgreSQL table; the in-memory
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
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_api_server.console.auth import ConsoleSessions
from hermes_api_server.responses_store import ResponseStore

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
        store = ResponseStore(Path(tmp) / "api_server.sqlite3", 100)
        await store.open()
        try:
            print(_row("SQLite file (one instance)", await _lookups(store, n)))
        finally:
            await store.close()
    if not dsn:
        print("PostgreSQL: skipped (give --dsn or HERMES_TEST_POSTGRES_DSN)")
        return
    from hermes_api_server.responses_store_pg import PgResponseStore

    pg = PgResponseStore(dsn, 100)
    await pg.open()
    try:
        print(_row("PostgreSQL api_console_sessions", await _lookups(pg, n)))
    finally:
        await pg.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--dsn", default=os.environ.get("HERMES_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    asyncio.run(main(args.n, args.dsn))
