"""Benchmark the SQLite storage backend against its budgets (not a test; always exits 0).

Measures, on a temporary database file, through the public ``Storage`` methods:

1. append, one transaction per row, each call awaited before the next (budget ≥ 10,000 rows/s),
   and the same with every call in flight at once (the database thread hands results back in
   batches);
2. loading a 1,000-message history (median; budget ≤ 5 ms): cold, on a freshly opened storage,
   and warm, when the decoded rows are cached;
3. a rewind at row 500 of 1,000: ``rewrite(archive_row_ids=<rows 500..999>, archived_reason=
   "rewind")`` (median; budget ≤ 10 ms).

Run: ``.venv/bin/python bench/bench_storage.py [--rows N] [--repeat N] [--dir PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes_core import NewRow, SessionRecord, StoredToolCall
from hermes_sqlite.store import SqliteStorage


def history_row(index: int) -> NewRow:
    """Return the ``index``-th row of a realistic mix: user, assistant with a tool call, tool result."""
    kind = index % 3
    if kind == 0:
        return NewRow(role="user", content=f"please look at file number {index} and fix the bug " * 3)
    if kind == 1:
        return NewRow(
            role="assistant",
            content="Let me read it.",
            tool_calls=(StoredToolCall("", f"call_{index}", "read_file", '{"path": "src/app.py"}'),),
            model="mock:echo",
            input_tokens=1200,
            output_tokens=40,
        )
    return NewRow(
        role="tool",
        content="line of code\n" * 20,
        call_id=f"tc_{index - 1}_0",
        tool_name="read_file",
        meta={"is_error": False},
    )


async def new_session(storage: SqliteStorage, session_id: str, rows: int = 0) -> list[int]:
    """Create a session, optionally with ``rows`` history rows; return their ids."""
    record = SessionRecord(id=session_id, source="cli", cwd="/tmp", profile="default")
    return await storage.create_session(record, [history_row(i) for i in range(rows)])


async def bench_append(storage: SqliteStorage, rows: int) -> float:
    """Append ``rows`` rows one awaited call (one transaction) each; return rows per second."""
    await new_session(storage, "append")
    batch = [history_row(i) for i in range(rows)]
    started = time.perf_counter()
    for row in batch:
        await storage.append_rows("append", [row])
    return rows / (time.perf_counter() - started)


async def bench_append_in_flight(storage: SqliteStorage, rows: int) -> float:
    """Issue ``rows`` one-row appends at once (still one transaction each); return rows per second."""
    await new_session(storage, "append-in-flight")
    batch = [history_row(i) for i in range(rows)]
    started = time.perf_counter()
    await asyncio.gather(*(storage.append_rows("append-in-flight", [row]) for row in batch))
    return rows / (time.perf_counter() - started)


async def bench_load(path: Path, storage: SqliteStorage, repeat: int) -> tuple[float, float]:
    """Load a 1,000-message history; return the cold and warm medians in ms."""
    await new_session(storage, "load", rows=1000)
    cold: list[float] = []
    for _ in range(repeat):
        fresh = SqliteStorage(path)
        await fresh.open()
        try:
            started = time.perf_counter()
            rows = await fresh.load_rows("load")
            cold.append((time.perf_counter() - started) * 1000)
        finally:
            await fresh.close()
        assert len(rows) == 1000
    warm: list[float] = []
    await storage.load_rows("load")
    for _ in range(repeat):
        started = time.perf_counter()
        rows = await storage.load_rows("load")
        warm.append((time.perf_counter() - started) * 1000)
        assert len(rows) == 1000
    return statistics.median(cold), statistics.median(warm)


async def bench_rewind(storage: SqliteStorage, repeat: int) -> float:
    """Rewind a fresh 1,000-row session at row 500, ``repeat`` times; return the median in ms."""
    times: list[float] = []
    for attempt in range(repeat):
        session_id = f"rewind-{attempt}"
        ids = await new_session(storage, session_id, rows=1000)
        started = time.perf_counter()
        await storage.rewrite(session_id, archive_row_ids=ids[500:], archived_reason="rewind")
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def run(folder: Path, rows: int, repeat: int) -> list[tuple[str, str, str, bool | None]]:
    """Run every measurement against ``folder/hermes.sqlite3``; return the table rows."""
    path = folder / "hermes.sqlite3"
    storage = SqliteStorage(path)
    await storage.open()
    try:
        append_rate = await bench_append(storage, rows)
        in_flight_rate = await bench_append_in_flight(storage, rows)
        cold_ms, warm_ms = await bench_load(path, storage, repeat)
        rewind_ms = await bench_rewind(storage, repeat)
    finally:
        await storage.close()
    return [
        (
            f"append, 1 txn/row, awaited ({rows:,} rows)",
            f"{append_rate:,.0f} rows/s",
            "≥ 10,000 rows/s",
            append_rate >= 10_000,
        ),
        (
            f"append, 1 txn/row, all in flight ({rows:,} rows)",
            f"{in_flight_rate:,.0f} rows/s",
            "(info)",
            None,
        ),
        (f"load 1,000 rows, cold (median of {repeat})", f"{cold_ms:.2f} ms", "≤ 5 ms", cold_ms <= 5),
        (f"load 1,000 rows, warm (median of {repeat})", f"{warm_ms:.2f} ms", "≤ 5 ms", warm_ms <= 5),
        (f"rewind at 500 of 1,000 (median of {repeat})", f"{rewind_ms:.2f} ms", "≤ 10 ms", rewind_ms <= 10),
    ]


def calibrate() -> float:
    """Time a fixed pure-Python workload (median of 5, in ms) to compare machines' speed."""
    times: list[float] = []
    for _ in range(5):
        started = time.perf_counter()
        sum(range(1_000_000))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def print_table(results: list[tuple[str, str, str, bool | None]]) -> None:
    """Print the results as an aligned table, then the platform and a CPU speed reference."""
    header = ("measurement", "result", "budget", "ok")
    cells = [header] + [(n, v, b, "-" if ok is None else "yes" if ok else "NO") for n, v, b, ok in results]
    widths = [max(len(row[i]) for row in cells) for i in range(4)]
    for name, value, budget, ok in cells:
        print(f"{name:<{widths[0]}}  {value:>{widths[1]}}  {budget:<{widths[2]}}  {ok}")
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {platform.system()}; "
        f"CPU reference: sum(range(10**6)) took {calibrate():.1f} ms"
    )


def main() -> int:
    """Parse arguments, run the benchmark, print the table; always return 0."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000, help="rows for the append measurements")
    parser.add_argument("--repeat", type=int, default=21, help="repetitions for the median measurements")
    parser.add_argument(
        "--dir", type=Path, default=None, help="folder for the database (default: a temp dir)"
    )
    args = parser.parse_args()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="hermes-bench-") as folder:
            results = asyncio.run(run(Path(folder), args.rows, args.repeat))
    else:
        with tempfile.TemporaryDirectory(prefix="hermes-bench-") as folder:
            results = asyncio.run(run(Path(folder), args.rows, args.repeat))
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
