"""What an ``Idempotency-Key`` on a non-streamed chat or Responses request costs in the API
server's records (docs/reference/api-server.md#limits-idempotency-and-extra-fields), which the
kernel's storage keeps (``kernel.records``): the first request's claim and stored answer, and a
retry answered from the records by another instance, on SQLite and on shared PostgreSQL.

``.venv/bin/python bench/bench_turn_keys.py [--requests 500]``; PostgreSQL is measured when
``HERMES_POSTGRES_DSN`` (or ``HERMES_TEST_POSTGRES_DSN``) names a server you may write to (a
private schema is created and dropped). Prints medians and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]

from hermes_api_server.idempotency import TurnKeys  # noqa: E402
from tests.api.records_world import api_records  # noqa: E402

ANSWER = [200, {"id": "chatcmpl-1", "choices": [{"message": {"content": "x" * 2000}}]}, {"X-A": "1"}]


async def answer() -> Any:
    return ANSWER


def line(what: str, times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"  {what}: median {statistics.median(times):.2f} ms, p95 {p95:.2f} ms"


async def measure(first: Any, other: Any, requests: int) -> list[str]:
    """Time ``requests`` first requests on one store and their retries on another."""
    a, b = TurnKeys(first), TurnKeys(other)
    firsts, retries = [], []
    for i in range(requests):
        key = ("bench", "chat", f"k{i}")
        started = time.perf_counter()
        await a.run(key, "fp", answer)
        firsts.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        _, replayed = await b.run(key, "fp", answer)
        retries.append((time.perf_counter() - started) * 1000)
        assert replayed
    return [
        line("first request (claim + store the answer)", firsts),
        line("retry on another instance", retries),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        async with api_records("sqlite", Path(tmp) / "hermes.sqlite3", count=2) as (one, two):
            print(f"SQLite, two kernels on one file ({args.requests} keys):")
            for text in await measure(one, two, args.requests):
                print(text)
    dsn = os.environ.get("HERMES_POSTGRES_DSN") or os.environ.get("HERMES_TEST_POSTGRES_DSN")
    if not dsn:
        print("PostgreSQL: skipped (set HERMES_POSTGRES_DSN to a server you may write to)")
        return
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}")
    private = make_conninfo(dsn, options=f"-c search_path={schema}")
    try:
        async with api_records("postgres", private, count=2) as (one, two):
            print(f"PostgreSQL, two instances ({args.requests} keys):")
            for text in await measure(one, two, args.requests):
                print(text)
    finally:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    asyncio.run(main())
