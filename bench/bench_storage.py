"""Benchmark the SQLite storage backend against its budgets (not a test; always exits 0).

Measures, on a temporary database file, through the public ``Storage`` methods:

1. append, one transaction per row, each call awaited before the next (budget ≥ 10,000 rows/s),
   and the same with every call in flight at once (the database thread hands results back in
   batches);
2. loading a 1,000-message history (median): cold, on a freshly opened storage; on an open
   storage with nothing cached (the budget, ≤ 5 ms: its connection and page cache are warm,
   its cache of decoded rows is empty); and warm, when the decoded rows are cached;
3. a rewind at row 500 of 1,000: ``rewrite(archive_row_ids=<rows 500..999>, archived_reason=
   "rewind")`` (median; budget ≤ 10 ms).

Every measurement is repeated ``--runs`` times on a fresh database; the table shows the median
run and the lowest and highest. Wall time on a shared machine swings with whatever else runs
(an awaited append is two thread wake-ups, each waiting for a free core), so next to it the table
gives CPU time, which is less sensitive to that (it still rises on a loaded machine, whose caches
are shared): of the database thread (read from its CPU clock) and, for appends, of the event-loop
thread. The footer shows a CPU reference and the load average, before and after the runs.

The event loop is the one ``hermes`` commands run on (``hermes_cli.event_loop``: uvloop where
installed, or what ``HERMES_EVENT_LOOP`` names); the footer says which.

Run: ``.venv/bin/python bench/bench_storage.py [--rows N] [--repeat N] [--runs N] [--dir PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes_cli import event_loop
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


def _zero() -> float:
    return 0.0


async def open_storage(path: Path) -> tuple[SqliteStorage, Callable[[], float]]:
    """Open a storage; return it and a reader of its database thread's CPU time in seconds.

    The thread is the one ``open()`` started. Where threads have no CPU clock the reader
    returns 0.
    """
    before = set(threading.enumerate())
    storage = SqliteStorage(path)
    await storage.open()
    started = [t for t in threading.enumerate() if t not in before and t.ident is not None]
    if len(started) != 1 or not hasattr(time, "pthread_getcpuclockid"):
        return storage, _zero
    clock = time.pthread_getcpuclockid(started[0].ident)  # type: ignore[arg-type]
    return storage, lambda: time.clock_gettime(clock)


@dataclass
class Measured:
    """One run's numbers."""

    append_rate: float = 0.0
    append_db_us: float = 0.0
    append_loop_us: float = 0.0
    in_flight_rate: float = 0.0
    cold_ms: float = 0.0
    cold_db_ms: float = 0.0
    uncached_ms: float = 0.0
    uncached_db_ms: float = 0.0
    warm_ms: float = 0.0
    rewind_ms: float = 0.0
    rewind_db_ms: float = 0.0


async def bench_append(storage: SqliteStorage, db_cpu: Callable[[], float], rows: int, out: Measured) -> None:
    """Append ``rows`` rows one awaited call (one transaction) each: rows/s and CPU µs per row."""
    await new_session(storage, "append")
    batch = [history_row(i) for i in range(rows)]
    db, loop, started = db_cpu(), time.thread_time(), time.perf_counter()
    for row in batch:
        await storage.append_rows("append", [row])
    elapsed = time.perf_counter() - started
    out.append_loop_us = (time.thread_time() - loop) / rows * 1e6
    out.append_db_us = (db_cpu() - db) / rows * 1e6
    out.append_rate = rows / elapsed


async def bench_append_in_flight(storage: SqliteStorage, rows: int, out: Measured) -> None:
    """Issue ``rows`` one-row appends at once (still one transaction each): rows per second."""
    await new_session(storage, "append-in-flight")
    batch = [history_row(i) for i in range(rows)]
    started = time.perf_counter()
    await asyncio.gather(*(storage.append_rows("append-in-flight", [row]) for row in batch))
    out.in_flight_rate = rows / (time.perf_counter() - started)


async def bench_load(
    path: Path, storage: SqliteStorage, db_cpu: Callable[[], float], repeat: int, out: Measured
) -> None:
    """Load a 1,000-message history: cold, uncached and warm medians in ms, with database CPU."""
    await new_session(storage, "load", rows=1000)
    cold: list[float] = []
    cold_cpu: list[float] = []
    for _ in range(repeat):
        fresh, fresh_cpu = await open_storage(path)
        try:
            db = fresh_cpu()
            started = time.perf_counter()
            rows = await fresh.load_rows("load")
            cold.append((time.perf_counter() - started) * 1000)
            cold_cpu.append((fresh_cpu() - db) * 1000)
        finally:
            await fresh.close()
        assert len(rows) == 1000
    uncached: list[float] = []
    uncached_cpu: list[float] = []
    for _ in range(repeat):
        # An open storage whose row cache is empty: what a process pays the first time it opens
        # a session after start-up (connection and prepared statements already warm).
        await storage._run(lambda _conn: storage._db().cache.clear())
        db, started = db_cpu(), time.perf_counter()
        rows = await storage.load_rows("load")
        uncached.append((time.perf_counter() - started) * 1000)
        uncached_cpu.append((db_cpu() - db) * 1000)
        assert len(rows) == 1000
    out.uncached_ms, out.uncached_db_ms = statistics.median(uncached), statistics.median(uncached_cpu)
    warm: list[float] = []
    await storage.load_rows("load")
    for _ in range(repeat):
        started = time.perf_counter()
        rows = await storage.load_rows("load")
        warm.append((time.perf_counter() - started) * 1000)
        assert len(rows) == 1000
    out.cold_ms, out.cold_db_ms = statistics.median(cold), statistics.median(cold_cpu)
    out.warm_ms = statistics.median(warm)


async def bench_rewind(
    storage: SqliteStorage, db_cpu: Callable[[], float], repeat: int, out: Measured
) -> None:
    """Rewind a fresh 1,000-row session at row 500, ``repeat`` times: median ms and CPU ms."""
    times: list[float] = []
    cpu: list[float] = []
    for attempt in range(repeat):
        session_id = f"rewind-{attempt}"
        ids = await new_session(storage, session_id, rows=1000)
        db, started = db_cpu(), time.perf_counter()
        await storage.rewrite(session_id, archive_row_ids=ids[500:], archived_reason="rewind")
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((db_cpu() - db) * 1000)
    out.rewind_ms, out.rewind_db_ms = statistics.median(times), statistics.median(cpu)


async def run_once(folder: Path, rows: int, repeat: int) -> Measured:
    """Run every measurement once against ``folder/hermes.sqlite3``."""
    path = folder / "hermes.sqlite3"
    out = Measured()
    storage, db_cpu = await open_storage(path)
    try:
        await bench_append(storage, db_cpu, rows, out)
        await bench_append_in_flight(storage, rows, out)
        await bench_load(path, storage, db_cpu, repeat, out)
        await bench_rewind(storage, db_cpu, repeat, out)
    finally:
        await storage.close()
    return out


Result = tuple[str, str, str, str, str, bool | None]


async def run(folder: Path, rows: int, repeat: int, runs: int) -> list[Result]:
    """Run everything ``runs`` times, each on a new database in ``folder``; return the table rows.

    Each row gives the median over the runs and, beside it, the lowest and highest run.
    """
    measured: list[Measured] = []
    for index in range(runs):
        sub = folder / f"run-{index}"
        sub.mkdir()
        measured.append(await run_once(sub, rows, repeat))

    def med(name: str) -> float:
        return statistics.median(getattr(m, name) for m in measured)

    def spread(name: str, unit: str, digits: int) -> str:
        values = [getattr(m, name) for m in measured]
        if len(values) < 2:
            return ""
        return f"{min(values):,.{digits}f}-{max(values):,.{digits}f} {unit}"

    rate, uncached, rewind = med("append_rate"), med("uncached_ms"), med("rewind_ms")
    return [
        (
            f"append, 1 txn/row, awaited ({rows:,} rows)",
            f"{rate:,.0f} rows/s",
            spread("append_rate", "rows/s", 0),
            f"db {med('append_db_us'):.0f} µs + loop {med('append_loop_us'):.0f} µs /row",
            "≥ 10,000 rows/s",
            rate >= 10_000,
        ),
        (
            f"append, 1 txn/row, all in flight ({rows:,} rows)",
            f"{med('in_flight_rate'):,.0f} rows/s",
            spread("in_flight_rate", "rows/s", 0),
            "",
            "(info)",
            None,
        ),
        (
            f"load 1,000 rows, cold: first load after open (median of {repeat})",
            f"{med('cold_ms'):.2f} ms",
            spread("cold_ms", "ms", 2),
            f"db {med('cold_db_ms'):.2f} ms",
            "(info)",
            None,
        ),
        (
            f"load 1,000 rows, open storage, nothing cached (median of {repeat})",
            f"{uncached:.2f} ms",
            spread("uncached_ms", "ms", 2),
            f"db {med('uncached_db_ms'):.2f} ms",
            "≤ 5 ms",
            uncached <= 5,
        ),
        (
            f"load 1,000 rows, warm: rows cached (median of {repeat})",
            f"{med('warm_ms'):.2f} ms",
            spread("warm_ms", "ms", 2),
            "",
            "≤ 5 ms",
            med("warm_ms") <= 5,
        ),
        (
            f"rewind at 500 of 1,000 (median of {repeat})",
            f"{rewind:.2f} ms",
            spread("rewind_ms", "ms", 2),
            f"db {med('rewind_db_ms'):.2f} ms",
            "≤ 10 ms",
            rewind <= 10,
        ),
    ]


def calibrate() -> float:
    """Time a fixed pure-Python workload (median of 5, in ms) to compare machines' speed."""
    times: list[float] = []
    for _ in range(5):
        started = time.perf_counter()
        sum(range(1_000_000))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def machine_note() -> str:
    """Describe how fast and how busy the machine is right now."""
    load = (
        f", load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
        if hasattr(os, "getloadavg")
        else ""
    )
    return f"CPU reference: sum(range(10**6)) took {calibrate():.1f} ms{load}"


def _loop_name() -> str:
    factory = event_loop.loop_factory()
    return "asyncio" if factory is None else factory.__module__.split(".")[0]


def print_table(results: list[Result], runs: int, before: str) -> None:
    """Print the results as an aligned table, then the platform and the CPU reference."""
    header = ("measurement", f"median of {runs} runs", "runs: min-max", "cpu time", "budget", "ok")
    cells = [header] + [
        (n, v, r, c, b, "-" if ok is None else "yes" if ok else "NO") for n, v, r, c, b, ok in results
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(6)]
    for name, value, spread, cpu, budget, ok in cells:
        print(
            f"{name:<{widths[0]}}  {value:>{widths[1]}}  {spread:>{widths[2]}}  {cpu:<{widths[3]}}  "
            f"{budget:<{widths[4]}}  {ok}"
        )
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {platform.system()}, event loop: {_loop_name()}"
    )
    print(f"before: {before}")
    print(f"after:  {machine_note()}")


def main() -> int:
    """Parse arguments, run the benchmark, print the table; always return 0."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000, help="rows for the append measurements")
    parser.add_argument("--repeat", type=int, default=21, help="repetitions for the median measurements")
    parser.add_argument("--runs", type=int, default=5, help="whole runs; the table shows their median")
    parser.add_argument(
        "--dir", type=Path, default=None, help="folder for the database (default: a temp dir)"
    )
    args = parser.parse_args()
    runs = max(1, args.runs)
    before = machine_note()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="hermes-bench-") as folder:
            results = event_loop.run(run(Path(folder), args.rows, args.repeat, runs))
    else:
        with tempfile.TemporaryDirectory(prefix="hermes-bench-") as folder:
            results = event_loop.run(run(Path(folder), args.rows, args.repeat, runs))
    print_table(results, runs, before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
