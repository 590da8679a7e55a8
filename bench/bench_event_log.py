"""Event-log benchmarks (docs/reference/core.md#the-event-log): append, replay, disk, and the TTFT
of ``hermes api`` with the log on and off.

- append: events a live session emits (a turn of 200 events at a time, so each turn is written
  as one chunk), through the kernel's log writer to SQLite and to PostgreSQL, until stored;
- replay: reading 10,000 events back from storage (a session not live in the process);
- disk: 1,000 turns through the kernel (a streamed answer of ~120 words each), the log's size
  against the size of the session's rows, on SQLite (pages of the tables and their indexes),
  with the session closed after every turn (a chunk per turn) and with turns back to back;
- TTFT: time to first token at c=1 through ``hermes api``, one server with the log on and one
  with it off, requests alternating between them (paired, so load from elsewhere hits both).

PostgreSQL rows need ``HERMES_TEST_POSTGRES_DSN`` (a private schema is made and dropped).
Prints a table with each figure's budget and the load average, and exits 0; not a test.

Run: ``python bench/bench_event_log.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hermes_core import (
    ChatRequest,
    Chunk,
    Event,
    FinishChunk,
    Kernel,
    SegmentStarted,
    TextChunk,
    TextDelta,
    TurnCompleted,
    TurnOutcome,
    TurnStarted,
    Usage,
    UsageUpdated,
)
from hermes_core.testing import FakeProvider, FakeProviderPlugin

WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her all she there would their we him been has when who will more no if out so said what "
    "up its about into than them can only other new some could time these two may then do first any my now"
).split()


def sqlite_settings(path: Path) -> dict[str, Any]:
    return {"backend": "sqlite", "path": str(path)}


def kernel(
    storage: dict[str, Any],
    *plugins: Any,
    entry_points: Iterable[str] = ("sqlite", "postgres"),
    event_log: dict[str, Any] | None = None,
) -> Kernel:
    settings = {
        "event_log": event_log or {},
        "model": "fake:model",
        "storage": storage,
        "titles": {"refine": False},
        "compression": {"auto_threshold": 0},
    }
    return Kernel.create(entry_points=list(entry_points), plugins=plugins, strict=True, settings=settings)


def answer(request: ChatRequest) -> list[Chunk]:
    rng = random.Random(len(request.messages))
    words = [rng.choice(WORDS) for _ in range(120)]
    return [*(TextChunk((" " if n else "") + w) for n, w in enumerate(words)), FinishChunk("stop")]


def synthetic_turn(session_id: str, n: int, size: int) -> list[Event]:
    """A turn's worth of events as a streaming answer produces them."""
    turn, seg = f"turn_{n}", f"seg_{n}"
    usage = Usage(input=500 + n, output=size, total=500 + n + size, calls=1)
    events: list[Event] = [
        TurnStarted(
            session_id=session_id,
            turn_id=turn,
            item_ids=(f"item_{n}",),
            user_row_id=n,
            queued=False,
            model="p:m",
            model_source="config",
        ),
        SegmentStarted(session_id=session_id, turn_id=turn, segment_id=seg),
    ]
    events += [
        TextDelta(session_id=session_id, turn_id=turn, segment_id=seg, text=f" {WORDS[i % len(WORDS)]}")
        for i in range(size - 4)
    ]
    events.append(UsageUpdated(session_id=session_id, turn_id=turn, usage=usage, turn_usage=usage))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    events.append(
        TurnCompleted(
            session_id=session_id,
            turn_id=turn,
            outcome=TurnOutcome("complete", "stop"),
            text=text,
            reasoning="",
            usage=usage,
            turn_usage=usage,
        )
    )
    return events


async def append_rate(storage: dict[str, Any], turns: int, per_turn: int = 200) -> tuple[float, float]:
    """Events per second from ``session.emit`` to stored, a turn at a time: by the wall clock,
    and by this process's CPU time (which a loaded machine inflates less)."""
    k = kernel(storage, FakeProviderPlugin(FakeProvider(answer)))
    async with k.running():
        session = await k.open_session(
            f"append_{secrets.token_hex(3)}", source="embed", owner="bench", cwd=Path(tempfile.gettempdir())
        )
        await (await session.submit("store the session", owner="bench")).outcome
        await k.events.flush()
        batches = [synthetic_turn(session.id, n, per_turn) for n in range(turns)]
        started, cpu = time.perf_counter(), time.process_time()
        for batch in batches:
            for event in batch:
                session.emit(event)
            await asyncio.sleep(0)  # the writer runs between turns, as it would between bursts
        await k.events.durable(session.id, batches[-1][-1].seq)
        elapsed, used = time.perf_counter() - started, time.process_time() - cpu
        await session.close()
    return turns * per_turn / elapsed, turns * per_turn / used


async def replay_ms(storage: dict[str, Any], events: int = 10_000) -> tuple[float, float, int]:
    """Milliseconds to read ``events`` events back from storage (best of 5: wall clock, and this
    process's CPU time), and how many came."""
    k = kernel(storage, FakeProviderPlugin(FakeProvider(answer)))
    async with k.running():
        session = await k.open_session(
            f"replay_{secrets.token_hex(3)}", source="embed", owner="bench", cwd=Path(tempfile.gettempdir())
        )
        await (await session.submit("store the session", owner="bench")).outcome
        for n in range(events // 200 + 1):
            for event in synthetic_turn(session.id, n, 200):
                session.emit(event)
            await asyncio.sleep(0)
        sid = session.id
        await session.close()
        best, best_cpu, got = float("inf"), float("inf"), 0
        for _ in range(5):
            started, cpu = time.perf_counter(), time.process_time()
            page = await k.events.read(sid, after=0, limit=events)
            best = min(best, (time.perf_counter() - started) * 1000)
            best_cpu = min(best_cpu, (time.process_time() - cpu) * 1000)
            got = len(page.items)
    return best, best_cpu, got


async def disk_ratio(path: Path, turns: int, *, per_request: bool) -> tuple[int, int, int, int]:
    """Run ``turns`` turns; return (rows bytes, log bytes) as pages and as payload.

    ``per_request``: open and close the session around each turn, as the API server does (each
    turn is then a chunk of its own, the most chunks a session gets); else one open session
    runs every turn back to back (chunks of many turns).
    """
    # Retention high enough to keep every turn: the figure compares the whole log with the rows.
    keep_all = {"max_events": 10**8, "max_bytes": 10**11}
    k = kernel(
        sqlite_settings(path),
        FakeProviderPlugin(FakeProvider(answer)),
        entry_points=["sqlite"],
        event_log=keep_all,
    )
    cwd = Path(tempfile.gettempdir())
    async with k.running():
        session = await k.open_session("disk", source="embed", owner="bench", cwd=cwd)
        for n in range(turns):
            prompt = f"Question number {n}: tell me about the topic we discussed."
            await (await session.submit(prompt, owner="bench")).outcome
            if per_request:
                await session.close()
                session = await k.open_session("disk", source="embed", owner="bench", cwd=cwd)
        await session.close()
    with sqlite3.connect(path) as conn:
        stats = {
            name: (int(pages), int(payload))
            for name, pages, payload in conn.execute(
                "SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name"
            ).fetchall()
        }
    rows = stats["messages"][0] + stats["messages_by_session"][0]
    log = stats["event_chunks"][0] + stats["event_chunks_by_session"][0]
    rows_payload = stats["messages"][1] + stats["messages_by_session"][1]
    log_payload = stats["event_chunks"][1] + stats["event_chunks_by_session"][1]
    return rows, log, rows_payload, log_payload


def start_api(home: Path, fake_port: int, log_enabled: bool) -> tuple[Any, int, str]:
    """Start ``hermes api`` on the fake upstream with the event log on or off."""
    import subprocess
    import threading

    (home / "config.toml").write_text(
        f'model = "fake:fake-t1-d0"\n[titles]\nrefine = false\n[compression]\nauto_threshold = 0\n'
        f"[event_log]\nenabled = {'true' if log_enabled else 'false'}\n"
        f'[[providers.custom]]\nname = "fake"\nbase_url = "http://127.0.0.1:{fake_port}/v1"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env["HERMES_HOME"] = str(home)
    binary = Path(sys.executable).parent / "hermes"
    proc = subprocess.Popen([str(binary), "api", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    port = 0
    for line in proc.stderr:
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
            break
    threading.Thread(target=lambda: [None for _ in proc.stderr or ()], daemon=True).start()
    return proc, port, (home / "api_server.key").read_text().strip()


async def paired_ttft(rounds: int) -> tuple[float, float, float, float, float]:
    """TTFT (ms) at c=1 through ``hermes api`` with the log on and with it off, requests
    alternating between the two servers (which goes first alternates too).

    :returns: the median with the log on, with it off, the median of the paired differences and
        its 95% interval (bootstrap), so that "within noise" can be told from a real cost.
    """
    import subprocess

    from bench_api import Target, free_port, ttft

    fake_port = free_port()
    fake = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("bench_api.py")), "--fake", str(fake_port)]
    )
    await asyncio.sleep(1.0)
    servers: list[tuple[Any, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as on_home, tempfile.TemporaryDirectory() as off_home:
            for home, enabled in ((Path(on_home), True), (Path(off_home), False)):
                proc, port, key = start_api(home, fake_port, enabled)
                servers.append((proc, Target(f"http://127.0.0.1:{port}/v1/chat/completions", key, "fake:")))
            for _, target in servers:
                await ttft(target, 1, 10)  # warm up
            on: list[float] = []
            off: list[float] = []
            for n in range(rounds):
                if n % 2:
                    off += await ttft(servers[1][1], 1, 1)
                    on += await ttft(servers[0][1], 1, 1)
                else:
                    on += await ttft(servers[0][1], 1, 1)
                    off += await ttft(servers[1][1], 1, 1)
            diffs = [a - b for a, b in zip(on, off, strict=True)]
            rng = random.Random(7)
            medians = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
            low, high = medians[50], medians[1949]
            return statistics.median(on), statistics.median(off), statistics.median(diffs), low, high
    finally:
        for proc, target in servers:
            await target.close()
            proc.terminate()
            proc.wait(15)
        fake.terminate()
        fake.wait(5)


async def postgres_dsn() -> tuple[str, Any] | None:
    dsn = os.environ.get("HERMES_TEST_POSTGRES_DSN", "").strip()
    if not dsn:
        return None
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}")

    async def drop() -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")

    return make_conninfo(dsn, options=f"-c search_path={schema}"), drop


class Rows(list[tuple[str, str, str]]):
    """The table, printed a row at a time as figures come in (a failure later loses none)."""

    def append(self, row: tuple[str, str, str]) -> None:
        super().append(row)
        print(f"{row[0]:<52}  {row[1]:>16}  {row[2]}", flush=True)


async def main(quick: bool) -> None:
    rows = Rows()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        turns = 50 if quick else 250
        rate, cpu_rate = await append_rate(sqlite_settings(base / "append.sqlite3"), turns)
        rows.append(("append, SQLite (events/s, 200 a turn)", f"{rate:,.0f}", "budget >= 50,000"))
        rows.append(("append, SQLite (events per CPU second)", f"{cpu_rate:,.0f}", ""))
        ms, cpu_ms, got = await replay_ms(sqlite_settings(base / "replay.sqlite3"))
        rows.append((f"replay {got:,} events, SQLite (ms, best of 5)", f"{ms:.1f}", "budget <= 50"))
        rows.append((f"replay {got:,} events, SQLite (CPU ms, best of 5)", f"{cpu_ms:.1f}", ""))
        pg = await postgres_dsn()
        if pg is not None:
            dsn, drop = pg
            try:
                storage = {"backend": "postgres", "dsn": dsn}
                rate, cpu_rate = await append_rate(storage, turns)
                rows.append(("append, PostgreSQL (events/s, 200 a turn)", f"{rate:,.0f}", "budget >= 10,000"))
                rows.append(("append, PostgreSQL (events per CPU second)", f"{cpu_rate:,.0f}", ""))
                ms, cpu_ms, got = await replay_ms(storage)
                rows.append(
                    (f"replay {got:,} events, PostgreSQL (ms, best of 5)", f"{ms:.1f}", "budget <= 50")
                )
                rows.append((f"replay {got:,} events, PostgreSQL (CPU ms, best of 5)", f"{cpu_ms:.1f}", ""))
            finally:
                await drop()
        else:
            rows.append(("PostgreSQL rows", "skipped", "set HERMES_TEST_POSTGRES_DSN"))
        count = 200 if quick else 1000
        for per_request, label in ((True, "a session per turn"), (False, "turns back to back")):
            name = f"disk-{per_request}.sqlite3"
            rows_pages, log_pages, rows_bytes, log_bytes = await disk_ratio(
                base / name, count, per_request=per_request
            )
            rows.append(
                (
                    f"disk, {count} turns, {label}: rows (KiB)",
                    f"{rows_pages / 1024:,.0f}",
                    "pages incl. index",
                )
            )
            rows.append(
                (f"disk, {count} turns, {label}: log (KiB)", f"{log_pages / 1024:,.0f}", "pages incl. index")
            )
            rows.append(
                (f"disk, {label}: log / rows (pages)", f"{log_pages / rows_pages:.2f}", "budget <= 2")
            )
            rows.append((f"disk, {label}: log / rows (payload)", f"{log_bytes / rows_bytes:.2f}", ""))
    reference = time.process_time()
    sum(range(10**6))
    rows.append(
        ("CPU reference: sum(range(10**6)) (CPU ms)", f"{(time.process_time() - reference) * 1000:.1f}", "")
    )
    rounds = 100 if quick else 400
    on, off, diff, low, high = await paired_ttft(rounds)
    rows.append((f"TTFT c=1 via hermes api, log on (median of {rounds}, ms)", f"{on:.2f}", ""))
    rows.append((f"TTFT c=1 via hermes api, log off (median of {rounds}, ms)", f"{off:.2f}", ""))
    rows.append(
        ("TTFT on - off, paired (median, 95% interval)", f"{diff:+.2f}", f"[{low:+.2f}, {high:+.2f}] ms")
    )
    rows.append(
        ("load average at start (1/5/15 min)", " / ".join(f"{x:.1f}" for x in load), f"{os.cpu_count()} CPUs")
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer turns and TTFT rounds")
    asyncio.run(main(parser.parse_args().quick))
