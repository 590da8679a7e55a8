"""PostgreSQL storage budgets (docs/deploy.md): appends, one transaction per row, awaited one
after another (with ``synchronous_commit`` on and off, and off with the writer lease held as a
serving instance holds it), and loading a 1,000-row history.

Run against a server you may write to (a private schema is created and dropped):
``HERMES_POSTGRES_DSN=postgresql://... .venv/bin/python bench/bench_postgres.py [--rows 5000]``.
``HERMES_TEST_POSTGRES_DSN`` (what ``.ci/run`` exports) works too. Prints rows/s and milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugins"))

from hermes_core import NewRow, SessionRecord, StoredToolCall


def history_row(i: int) -> NewRow:
    """A mix like a coding session's: user, assistant with a tool call, tool result."""
    kind = i % 3
    if kind == 0:
        return NewRow(role="user", content=f"please look at file {i}.py and fix the bug " * 3)
    if kind == 1:
        call = StoredToolCall("", f"call_{i}", "read_file", f'{{"path": "src/{i}.py"}}')
        return NewRow(
            role="assistant", content="Reading it.", tool_calls=(call,), model="openai:gpt", output_tokens=40
        )
    return NewRow(
        role="tool",
        content="def f():\n    return 1\n" * 20,
        call_id=f"tc_{i - 1}_0",
        tool_name="read_file",
        meta={"is_error": False},
    )


async def appends(
    dsn: str, rows: int, synchronous_commit: str, rounds: int, leased: bool = False
) -> list[float]:
    """Return rows/s of each round of ``rows`` one-row appends awaited one after another.

    :param leased: hold the session's writer lease, as a serving instance does: every append is
        then fenced on it.
    """
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from hermes_postgres.plugin import make_storage

    options = conninfo_to_dict(dsn).get("options", "")
    store = make_storage(
        dsn=make_conninfo(dsn, options=f"{options} -c synchronous_commit={synchronous_commit}".strip()),
        pool_size=4,
        pool_timeout_s=10,
    )
    await store.open()
    try:
        session_id = f"bench-append-{synchronous_commit}-{'leased' if leased else 'plain'}"
        await store.create_session(SessionRecord(id=session_id, source="bench", cwd="/", profile="default"))
        if leased:
            assert await store.acquire_lease(session_id, "bench", 600) is None
        for i in range(50):  # warm the pool and the prepared statements
            await store.append_rows(session_id, [history_row(i)])
        rates = []
        for _ in range(rounds):
            started = time.perf_counter()
            for i in range(rows):
                await store.append_rows(session_id, [history_row(i)])
            rates.append(rows / (time.perf_counter() - started))
        return rates
    finally:
        await store.close()


async def floor(dsn: str, rows: int, rounds: int) -> list[float]:
    """Return rows/s of each round of plain one-row INSERTs through a pool: what the machine allows."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg_pool import AsyncConnectionPool

    options = conninfo_to_dict(dsn).get("options", "")
    pool = AsyncConnectionPool(
        make_conninfo(dsn, options=f"{options} -c synchronous_commit=off".strip()),
        min_size=1,
        max_size=2,
        kwargs={"autocommit": True},
        open=False,
    )
    await pool.open(wait=True)
    try:
        async with pool.connection() as conn:
            await conn.execute("CREATE TABLE bench_floor (id bigserial PRIMARY KEY, content text)")
        rates = []
        for _ in range(rounds):
            started = time.perf_counter()
            for i in range(rows):
                async with pool.connection() as conn:
                    await conn.execute("INSERT INTO bench_floor (content) VALUES (%s)", (f"row {i}",))
            rates.append(rows / (time.perf_counter() - started))
        return rates
    finally:
        await pool.close()


async def loads(dsn: str, size: int, repeats: int) -> list[float]:
    """Return milliseconds per ``load_rows`` of a ``size``-row history."""
    from hermes_postgres.plugin import make_storage

    store = make_storage(dsn=dsn, pool_size=4, pool_timeout_s=10)
    await store.open()
    try:
        session_id = "bench-load"
        await store.create_session(
            SessionRecord(id=session_id, source="bench", cwd="/", profile="default"),
            [history_row(i) for i in range(size)],
        )
        for _ in range(5):
            assert len(await store.load_rows(session_id)) == size
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            await store.load_rows(session_id)
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await store.close()


def spread(rates: list[float]) -> str:
    """Median and best of the rounds' rows/s (the machine may be busy with other work)."""
    return f"{statistics.median(rates):,.0f} rows/s median, {max(rates):,.0f} best of {len(rates)}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5000, help="appends per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measurement (median, best)")
    parser.add_argument("--loads", type=int, default=200, help="history loads to time")
    args = parser.parse_args()
    dsn = os.environ.get("HERMES_POSTGRES_DSN") or os.environ.get("HERMES_TEST_POSTGRES_DSN")
    if not dsn:
        print("no server: set HERMES_POSTGRES_DSN (or HERMES_TEST_POSTGRES_DSN) to one you may write to")
        return
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}")
        cur = await admin.execute("SELECT current_setting('server_version'), current_setting('fsync')")
        version, fsync = await cur.fetchone() or ("?", "?")
    # A name of its own: tests on the same server that drop "hermes" connections leave it alone.
    private = make_conninfo(dsn, options=f"-c search_path={schema}", application_name="hermes-bench")
    try:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"PostgreSQL {version} (fsync={fsync}), {args.rows} appends per row below; load average {load}")
        for setting, leased in (("on", False), ("off", False), ("off", True)):
            rates = await appends(private, args.rows, setting, args.rounds, leased)
            print(
                f"append, one transaction per row, awaited (synchronous_commit={setting}"
                f"{', lease held: fenced' if leased else ''}): {spread(rates)}"
            )
        base = await floor(private, args.rows, args.rounds)
        print(f"  for scale: a plain one-row INSERT, same pool (synchronous_commit=off): {spread(base)}")
        times = await loads(private, 1000, args.loads)
        ordered = sorted(times)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        print(f"load a 1,000-row history: median {statistics.median(times):.2f} ms, p95 {p95:.2f} ms")
    finally:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    try:  # the event loop ``hermes`` itself runs on where it is installed (hermes_cli/event_loop.py)
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())
