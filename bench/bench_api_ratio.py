"""``hermes api`` against its floor, in one run: the figures of issue #30 as ratios.

Starts the fake upstream of ``bench_api.py``, the bare aiohttp relay of ``bench_api_floor.py`` and
one ``hermes api``, and measures all three side by side, interleaved round by round so that the
load other processes put on this shared machine falls on each alike. Absolute numbers move with
that load; the ratios (hermes' added time over the relay's) are what to compare between runs.

- added TTFT at c=1 (median) and in bursts of 50 at once (p95): each path's time to the first
  content delta minus going straight to the fake;
- 200 streams at 50 tok/s: TTFT p99 and the p99 gap between a stream's deltas;
- 1,000 streams at 10 tok/s: how many complete, gap p99, the server's peak RSS.

Storage is the SQLite file by default; ``--postgres`` runs hermes on PostgreSQL storage with the
Redis run bus (``HERMES_TEST_POSTGRES_DSN`` / ``HERMES_TEST_REDIS_URL``, as ``.ci/run`` exports;
a private schema is created and dropped). Prints a table and exits 0: a regression guard to
read, not a pass/fail test on a shared machine.

``--base-bin PATH`` also starts the ``hermes`` executable at PATH (e.g. of a worktree of ``main``
with its own venv: ``git worktree add --detach /tmp/base main``, then ``python3 -m venv
/tmp/base/.venv && /tmp/base/.venv/bin/pip install -e /tmp/base``) and interleaves it with this
checkout's round by round: a paired before/after under the same load.

``--stream-rounds N`` runs each stream figure N times per server, rotating the servers' order
each round, and shows the medians: the stream rows of one round are a single run per server,
one after the other, and move with the machine's drift.

``--scoped-key`` calls this checkout's server with a scoped key of a tenant (made with ``hermes
keys create``) instead of the configured key: the key lookup and the tenant's session checks.

Run: ``.venv/bin/python bench/bench_api_ratio.py [--quick] [--postgres] [--base-bin PATH] [--scoped-key]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_api
from bench_api import BIN, Target, cpu_s, free_port, pct, rss_mb
from bench_durable_floor import start_floor

PATH = "/v1/chat/completions"
KEY = "hk_" + secrets.token_urlsafe(32)


def start_hermes(
    home: Path, fake_port: int, extra_config: str, env_extra: dict[str, str], binary: Path = BIN
) -> tuple[subprocess.Popen[str], int]:
    """Start ``hermes api`` on a free port with the fake as its ``fake`` custom provider."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "fake:fake-t1-d0"\n[titles]\nrefine = false\n[compression]\nauto_threshold = 0\n'
        "[api_server]\nmax_concurrent_runs = 1100\n"
        f'[[providers.custom]]\nname = "fake"\nbase_url = "http://127.0.0.1:{fake_port}/v1"\n' + extra_config
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env.update(HERMES_HOME=str(home), API_SERVER_KEY=KEY, **env_extra)
    proc = subprocess.Popen([str(binary), "api", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    port = 0
    for line in proc.stderr:
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
            break
    if not port:
        sys.exit(f"bench_api_ratio: hermes api in {home} did not start")
    # Keep draining stderr (a full pipe would block the server), echoing warnings and errors.
    threading.Thread(
        target=lambda: [
            print(line, end="", file=sys.stderr) for line in proc.stderr or () if "ERROR" in line
        ],
        daemon=True,
    ).start()
    return proc, port


#: The fake model of the TTFT rounds (``--upstream-ttfb`` adds the upstream's thinking time).
TTFT_MODEL = "fake-t5-d0"


async def burst(target: Target, concurrency: int) -> list[float]:
    """TTFT (ms) of ``concurrency`` distinct first turns sent at once."""
    results = await asyncio.gather(
        *(target.stream(None, TTFT_MODEL, f"bench {time.time_ns()} {i}") for i in range(concurrency))
    )
    return [r[0] * 1000 for r in results]


async def streams(
    target: Target, count: int, tokens: int, pause_ms: int, pid: int | None
) -> dict[str, float]:
    """``count`` streams of ``tokens`` deltas ``pause_ms`` apart, all at once, on fresh connections."""
    fresh = Target(target.url, target.headers.get("Authorization", "")[7:] or None, target.prefix)
    gaps: list[float] = []
    firsts: list[float] = []
    peak = 0.0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set() and pid:
            peak = max(peak, rss_mb(pid))
            await asyncio.sleep(0.2)

    async def one(i: int) -> int:
        first, got, _ = await fresh.stream(
            None, f"fake-t{tokens}-d{pause_ms}", f"s{i} {time.time_ns()}", gaps=gaps
        )
        firsts.append(first * 1000)
        return got

    sampler = asyncio.create_task(sample())
    cpu_before = cpu_s(pid) if pid else 0.0
    results = await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)
    cpu_used = cpu_s(pid) - cpu_before if pid else float("nan")
    done.set()
    await sampler
    await fresh.close()
    complete = sum(1 for r in results if r == tokens)
    return {
        # Server CPU (all threads) per 1000 streamed tokens, the streams' set-up included.
        "cpu_per_1k": cpu_used * 1000 * 1000 / (count * tokens),
        # Content chunks a client got per stream (fewer: more tokens per chunk, fewer gaps).
        "chunks": len(gaps) / count + 1,
        "complete": complete,
        "ttft_p99": pct(firsts, 0.99) if firsts else float("nan"),
        "gap_p99": pct(gaps, 0.99) * 1000 if gaps else float("nan"),
        "rss_peak": peak,
    }


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


Servers = dict[str, tuple[Target, int]]  # name -> (target, server pid)


async def measure(
    quick: bool,
    rounds: int,
    direct: Target,
    servers: Servers,
    ttft_only: bool = False,
    streams_only: bool = False,
) -> list[tuple[str, ...]]:
    """Every figure for every server, interleaved round by round; rows of strings."""
    paths = {"direct": direct, **{name: target for name, (target, _) in servers.items()}}
    for target in paths.values():  # warm up: imports, pooled connections for c=50
        await bench_api.ttft(target, 1, 5, TTFT_MODEL)
        await burst(target, 50)
    rows: list[tuple[str, ...]] = []
    if not streams_only:
        rows += await _ttft_rows(rounds, direct, paths, servers)
    if ttft_only:
        return rows
    rows += await _stream_rows(quick, servers)
    return rows


async def _ttft_rows(
    rounds: int, direct: Target, paths: dict[str, Target], servers: Servers
) -> list[tuple[str, ...]]:
    one: dict[str, list[float]] = {name: [] for name in paths}
    fifty: dict[str, list[float]] = {name: [] for name in paths}
    cpu = dict.fromkeys(servers, 0.0)
    cpu1 = dict.fromkeys(servers, 0.0)
    for _ in range(rounds):  # interleaved: the machine's noise falls on every path alike
        for name, target in paths.items():
            before = cpu_s(servers[name][1]) if name in servers else 0.0
            one[name] += await bench_api.ttft(target, 1, 10, TTFT_MODEL)
            if name in servers:
                cpu1[name] += cpu_s(servers[name][1]) - before
        for name, target in paths.items():
            before = cpu_s(servers[name][1]) if name in servers else 0.0
            fifty[name] += await burst(target, 50)
            if name in servers:
                cpu[name] += cpu_s(servers[name][1]) - before
    d1, d50 = statistics.median(one["direct"]), pct(fifty["direct"], 0.95)
    added1 = {name: statistics.median(one[name]) - d1 for name in servers}
    added50 = {name: pct(fifty[name], 0.95) - d50 for name in servers}
    rows: list[tuple[str, ...]] = []
    rows.append(("added TTFT c=1 median (ms)", *_with_ratio(added1), "<= 3x relay"))
    rows.append(("added TTFT c=50 p95 (ms)", *_with_ratio(added50), "<= 3x relay"))
    # The serialized work itself: CPU time of the server process per request of the bursts
    # (all threads; 10 ms ticks). Less moved by the machine's load than the latencies are.
    per = {name: used * 1000 / (rounds * 50) for name, used in cpu.items()}
    rows.append(("server CPU per c=50 request (ms)", *_with_ratio(per), "(ratio to the relay)"))
    per1 = {name: used * 1000 / (rounds * 10) for name, used in cpu1.items()}
    rows.append(("server CPU per c=1 request (ms)", *_with_ratio(per1), "(ratio to the relay)"))
    if "durable" in per:
        # What the framework costs beyond the durable work a turn needs (bench/README.md,
        # fifteenth pass): the figure to watch as the request path gets shorter.
        beyond = ", ".join(
            f"{name} +{per[name] - per['durable']:.2f} ms" for name in per if name not in ("relay", "durable")
        )
        rows.append((f"  (CPU per c=50 request beyond the durable floor: {beyond})",))
    rows.append((f"  (load average after the TTFT rounds: {load()})",))
    return rows


#: How many times each server runs each stream figure (``--stream-rounds``); the rows show medians.
STREAM_ROUNDS = 1


async def _rounds_of(servers: Servers, count: int, tokens: int, pause_ms: int) -> dict[str, dict[str, float]]:
    """Run ``streams`` on every server ``STREAM_ROUNDS`` times, the order rotated each round (the
    machine's drift falls on each server alike); return each figure's median per server."""
    names = list(servers)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for round_ in range(STREAM_ROUNDS):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            target, pid = servers[name]
            runs[name].append(await streams(target, count, tokens, pause_ms, pid))
    return {
        name: {key: statistics.median(r[key] for r in results) for key in results[0]}
        for name, results in runs.items()
    }


async def _stream_rows(quick: bool, servers: Servers) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [(f"  (load average before the streams: {load()})",)]
    if STREAM_ROUNDS > 1:
        rows.append((f"  (stream figures: medians of {STREAM_ROUNDS} rounds, the servers' order rotated)",))
    figures: list[tuple[str, str, str, str]] = [
        ("200 streams @50 tok/s: TTFT p99 (ms)", "ttft_p99", "{:.1f}", "<= 250"),
        ("200 streams @50 tok/s: gap p99 (ms)", "gap_p99", "{:.1f}", "<= 50"),
        ("200 streams: server CPU per 1k tokens (ms)", "cpu_per_1k", "{:.1f}", ""),
        ("200 streams: content chunks per stream", "chunks", "{:.1f}", f"(of {50 if quick else 100})"),
    ]
    results = await _rounds_of(servers, 200, 50 if quick else 100, 20)
    rows += [(label, *_plain(results, key, form), budget) for label, key, form, budget in figures]
    rows.append((f"  (load average after the 200 streams: {load()})",))
    figures = [
        ("1000 streams @10 tok/s: complete", "complete", "{:.0f}", "= 1000"),
        ("1000 streams @10 tok/s: gap p99 (ms)", "gap_p99", "{:.1f}", "<= 100"),
        ("1000 streams: server peak RSS (MB)", "rss_peak", "{:.1f}", "<= 300"),
        ("1000 streams: server CPU per 1k tokens (ms)", "cpu_per_1k", "{:.1f}", ""),
    ]
    results = await _rounds_of(servers, 1000, 30 if quick else 100, 100)
    rows += [(label, *_plain(results, key, form), budget) for label, key, form, budget in figures]
    rows.append((f"  (load average after the streams: {load()})",))
    return rows


def _with_ratio(added: dict[str, float]) -> list[str]:
    floor = added["relay"]
    return [f"{v:+.2f}" if n == "relay" else f"{v:+.2f} {_ratio(v, floor)}" for n, v in added.items()]


def _plain(results: dict[str, dict[str, float]], key: str, form: str) -> list[str]:
    return [
        "-" if key == "rss_peak" and name == "relay" else form.format(r[key]) for name, r in results.items()
    ]


def _ratio(value: float, floor: float) -> str:
    return f"({value / floor:.1f}x)" if floor > 0 else "(-)"


def scoped_key(home: Path, env_extra: dict[str, str], binary: Path) -> str:
    """Make a ``control`` key of a tenant with ``hermes keys create`` in ``home``; return its secret."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env.update(HERMES_HOME=str(home), **env_extra)
    done = subprocess.run(
        [str(binary), "keys", "create", "--tenant", "bench", "--scope", "control"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


async def main(
    quick: bool,
    rounds: int,
    postgres: bool,
    base_bin: Path | None,
    scoped: bool = False,
    with_config: Path | None = None,
    ttft_only: bool = False,
    streams_only: bool = False,
    durable_floor: bool = False,
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))  # inherited
    fake_port, relay_port = free_port(), free_port()
    here = Path(__file__).resolve().parent
    fake = subprocess.Popen([sys.executable, str(here / "bench_api.py"), "--fake", str(fake_port)])
    relay_proc = subprocess.Popen(
        [sys.executable, str(here / "bench_api_floor.py"), "--relay", str(relay_port), str(fake_port)]
    )
    extra_config, env_extra, schemas, dsn = "", {}, [], ""
    if postgres:
        dsn = os.environ.get("HERMES_TEST_POSTGRES_DSN", "")
        url = os.environ.get("HERMES_TEST_REDIS_URL", "")
        if not dsn or not url:
            sys.exit("bench_api_ratio --postgres: set HERMES_TEST_POSTGRES_DSN and HERMES_TEST_REDIS_URL")
        env_extra = {"HERMES_REDIS_URL": url}
        extra_config = '[storage]\nbackend = "postgres"\n[bus]\nbackend = "redis"\n'
    procs: list[subprocess.Popen[str]] = []
    servers: Servers = {"relay": (Target(f"http://127.0.0.1:{relay_port}{PATH}", None, ""), relay_proc.pid)}
    if durable_floor:
        floor, floor_port = start_floor(fake_port)
        procs.append(floor)
        servers["durable"] = (Target(f"http://127.0.0.1:{floor_port}{PATH}", None, "fake:"), floor.pid)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            builds = {"hermes": BIN} if base_bin is None else {"base": base_bin, "hermes": BIN}
            if with_config is not None:
                if base_bin is not None:
                    builds["base+cfg"] = base_bin
                builds["hermes+cfg"] = BIN
            for name, binary in builds.items():
                env = dict(env_extra)
                if postgres:
                    env["HERMES_POSTGRES_DSN"] = await _schema(dsn, schemas)
                config = extra_config
                if name.endswith("+cfg") and with_config is not None:
                    config += "\n" + with_config.read_text(encoding="utf-8")
                proc, port = start_hermes(Path(tmp) / name, fake_port, config, env, binary)
                procs.append(proc)
                key = scoped_key(Path(tmp) / name, env, binary) if scoped and name == "hermes" else KEY
                servers[name] = (Target(f"http://127.0.0.1:{port}{PATH}", key, "fake:"), proc.pid)
            await asyncio.sleep(1.0)
            direct = Target(f"http://127.0.0.1:{fake_port}{PATH}", None, "")
            started = load()
            try:
                rows = await measure(quick, rounds, direct, servers, ttft_only, streams_only)
            finally:
                for target in [direct, *(t for t, _ in servers.values())]:
                    await target.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        relay_proc.terminate()
        fake.terminate()
        relay_proc.wait(10)
        fake.wait(10)
        if schemas:
            import psycopg

            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
                for schema in schemas:
                    await admin.execute(f"DROP SCHEMA {schema} CASCADE")
    storage = "PostgreSQL + Redis bus" if postgres else "SQLite"
    print(f"hermes api on {storage}; {os.cpu_count()} cores; load average at start {started}")
    if base_bin is not None:
        print(f"base: {base_bin}; hermes: {BIN}")
    if TTFT_MODEL.count("-") > 2:
        print(f"TTFT rounds: the fake upstream answers after {TTFT_MODEL.rsplit('-f', 1)[1]} ms")
    names = list(servers)
    print(f"{'metric':<38} " + " ".join(f"{n:>16}" for n in names) + "  budget")
    for row in rows:
        if len(row) == 1:
            print(row[0])
            continue
        print(f"{row[0]:<38} " + " ".join(f"{v:>16}" for v in row[1:-1]) + f"  {row[-1]}")


async def _schema(dsn: str, schemas: list[str]) -> str:
    """Create a private schema for one server; return its DSN."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{secrets.token_hex(5)}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}")
    schemas.append(schema)
    return make_conninfo(dsn, options=f"-c search_path={schema}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and shorter streams (CI)")
    parser.add_argument("--postgres", action="store_true", help="hermes on PostgreSQL storage + Redis bus")
    parser.add_argument("--rounds", type=int, help="interleaved TTFT rounds (default 4 quick, 12 full)")
    parser.add_argument(
        "--base-bin",
        type=Path,
        help="also run a second hermes api from this executable (e.g. a worktree of main's venv), "
        "interleaved with this one: a paired before/after under the same machine load",
    )
    parser.add_argument(
        "--scoped-key",
        action="store_true",
        help="this checkout's server is called with a scoped key of a tenant (hermes keys create), "
        "not the configured key: what a stored key's lookup and tenant checks add",
    )
    parser.add_argument(
        "--with-config",
        type=Path,
        help="also run this hermes api with the TOML of this file appended to its config.toml "
        "(e.g. a [budgets] section), interleaved: a paired off/on of a setting",
    )
    parser.add_argument(
        "--ttft-only",
        action="store_true",
        help="only the TTFT rounds and the server CPU per request (no stream figures)",
    )
    parser.add_argument(
        "--streams-only",
        action="store_true",
        help="only the stream figures (200 and 1,000 streams) with the server CPU per 1k tokens",
    )
    parser.add_argument(
        "--stream-rounds",
        type=int,
        default=1,
        help="run each stream figure this many times per server, the order rotated; show medians",
    )
    parser.add_argument(
        "--upstream-ttfb",
        type=int,
        default=0,
        metavar="MS",
        help="the fake upstream waits MS milliseconds before answering in the TTFT rounds (a real "
        "model's time to first byte): what hermes does meanwhile is then off the first token's path",
    )
    parser.add_argument(
        "--durable-floor",
        action="store_true",
        help="also run bench_durable_floor.py: the relay plus the durable work every turn must do "
        "(prompt stored before the first frame, reply and event log stored before the end, chunks "
        "re-encoded); what hermes adds beyond it is the framework's own",
    )
    args = parser.parse_args()
    STREAM_ROUNDS = max(1, args.stream_rounds)
    if args.upstream_ttfb:
        TTFT_MODEL = f"fake-t5-d0-f{args.upstream_ttfb}"
    gc.freeze()  # the load client is the harness: see bench_api.py
    gc.disable()
    rounds = args.rounds or (4 if args.quick else 12)
    asyncio.run(
        main(
            args.quick,
            rounds,
            args.postgres,
            args.base_bin,
            args.scoped_key,
            args.with_config,
            args.ttft_only,
            args.streams_only,
            args.durable_floor,
        )
    )
