"""Count the SQLite jobs ``hermes api`` queues per streamed first turn, by caller (issue #30).

``--postgres``: run it on PostgreSQL storage and the Redis run bus instead (as
``bench_api_ratio.py --postgres``) and count what goes over the wire: PostgreSQL statements
(each ``execute``, and each ``BEGIN``/``COMMIT`` a transaction sends) and Redis writes (each
command or pipeline sent on a connection), by the storage or bus call that sent them.

Starts the fake upstream of ``bench_api.py`` and one ``hermes api`` (SQLite) whose database
thread counts every job it is handed (``DbThread.call``, run on the thread or inline on the loop)
under the innermost non-SQLite frames that queued it, sends ``--requests`` first turns (bursts of
10, as ``bench_api_ratio.py`` does: no session header, so the chat index places and records
each), and prints the counts. Each job
is a trip to the database thread and back: a future, a wake-up of the loop, and the thread's
share of the GIL. Not a test.

Run: ``.venv/bin/python bench/api_storage_calls.py [--requests 50] [--bin PATH] [--postgres]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_api
from bench_api_ratio import KEY, PATH, _schema, burst, start_hermes

# Runs inside the server: wraps DbThread.call, writes the counts to $COUNT_OUT on SIGUSR1.
_PATCH = """
import collections, os, signal, sys
import hermes_sqlite.worker as worker
counts = collections.Counter()
real = worker.DbThread.call
def call(self, job, *, group=False, inline=False):
    frame, names = sys._getframe(1), []
    while frame is not None and len(names) < 3:
        code = frame.f_code
        if "hermes_sqlite" not in code.co_filename:
            names.append(f"{os.path.basename(code.co_filename)}:{code.co_name}")
        frame = frame.f_back
    counts[" < ".join(names)] += 1
    return real(self, job, group=group, inline=inline)
worker.DbThread.call = call
def dump(*_):
    with open(os.environ["COUNT_OUT"], "w") as out:
        out.writelines(f"{n} {where}\\n" for where, n in counts.most_common())
    counts.clear()
signal.signal(signal.SIGUSR1, dump)
from hermes_launcher import main
sys.argv[0] = "hermes"
main()
"""

# The same for PostgreSQL + Redis: each statement psycopg sends (a cursor's execute; BEGIN,
# COMMIT and the like through _exec_command) and each write redis-py makes on a connection (a
# command, or a whole pipeline), under the plugin frame and the caller that made it.
_WIRE_PATCH = """
import collections, os, signal, sys
counts = collections.Counter()
LIBS = ("/psycopg", "/redis/", "/asyncio/", "contextlib", "/hermes_postgres/", "/hermes_redis/")
def where(kind, what):
    frame, plugin, caller = sys._getframe(2), "", ""
    while frame is not None and not caller:
        code = frame.f_code
        name = f"{os.path.basename(code.co_filename)}:{code.co_name}"
        if "/hermes_postgres/" in code.co_filename or "/hermes_redis/" in code.co_filename:
            plugin = name
        elif not any(lib in code.co_filename for lib in LIBS):
            caller = name
        frame = frame.f_back
    counts[f"{kind} {what} {plugin} < {caller}"] += 1
import psycopg, psycopg._connection_base as base
from redis.asyncio.connection import AbstractConnection
def counted(cls, attr, kind):
    real = getattr(cls, attr)
    def wrapper(*args, **kwargs):
        first = args[1] if len(args) > 1 else ""
        first = first.decode() if isinstance(first, bytes) else first if isinstance(first, str) else ""
        where(kind, (first.split() or ["?"])[0].upper() if kind == "pg" else "")
        return real(*args, **kwargs)
    setattr(cls, attr, wrapper)
counted(psycopg.AsyncCursor, "execute", "pg")
counted(psycopg.AsyncCursor, "executemany", "pg")
counted(base.BaseConnection, "_exec_command", "pg")
counted(AbstractConnection, "send_packed_command", "redis")
def dump(*_):
    with open(os.environ["COUNT_OUT"], "w") as out:
        out.writelines(f"{n} {where}\\n" for where, n in counts.most_common())
    counts.clear()
signal.signal(signal.SIGUSR1, dump)
from hermes_launcher import main
sys.argv[0] = "hermes"
main()
"""


async def main(requests: int, binary: Path, postgres: bool = False) -> None:
    if not postgres:
        await _count(requests, binary, _PATCH, "", {}, "SQLite jobs")
        return
    dsn = os.environ.get("HERMES_TEST_POSTGRES_DSN", "")
    url = os.environ.get("HERMES_TEST_REDIS_URL", "")
    if not dsn or not url:
        sys.exit("api_storage_calls --postgres: set HERMES_TEST_POSTGRES_DSN and HERMES_TEST_REDIS_URL")
    schemas: list[str] = []
    config = '[storage]\nbackend = "postgres"\n[bus]\nbackend = "redis"\n'
    try:
        env = {"HERMES_REDIS_URL": url, "HERMES_POSTGRES_DSN": await _schema(dsn, schemas)}
        await _count(requests, binary, _WIRE_PATCH, config, env, "PostgreSQL statements + Redis writes")
    finally:
        import psycopg

        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            for schema in schemas:
                await admin.execute(f"DROP SCHEMA {schema} CASCADE")


async def _count(
    requests: int, binary: Path, patch: str, config: str, env_extra: dict[str, str], what: str
) -> None:
    fake_port = bench_api.free_port()
    fake = subprocess.Popen([sys.executable, bench_api.__file__, "--fake", str(fake_port)])
    try:
        rows = await _counted(requests, binary, patch, config, env_extra, fake_port)
    finally:
        fake.terminate()
        fake.wait(10)
    sent = max(1, requests // 10) * 10
    total = sum(int(n) for n, _ in rows)
    print(f"{what} per streamed first turn: {total / sent:.2f} ({sent} requests)")
    for n, where in rows:
        print(f"  {int(n) / sent:5.2f}  {where}")


async def _counted(
    requests: int, binary: Path, patch: str, config: str, env_extra: dict[str, str], fake_port: int
) -> list[list[str]]:
    """Run the counted server against the fake on ``fake_port``; return its counts' lines."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "counts.txt"
        wrapper = Path(tmp) / "hermes"
        python = binary.parent / "python"
        wrapper.write_text(f'#!/bin/sh\nexec {python} -P -c "$HERMES_COUNT_PATCH" "$@"\n')
        wrapper.chmod(0o755)
        env = {"COUNT_OUT": str(out), "HERMES_COUNT_PATCH": patch}
        os.environ.update(env)
        proc, port = start_hermes(Path(tmp) / "home", fake_port, config, {**env, **env_extra}, wrapper)
        target = bench_api.Target(f"http://127.0.0.1:{port}{PATH}", KEY, "fake:")
        try:
            await asyncio.sleep(1.0)
            await burst(target, 10)  # warm-up, not counted
            await asyncio.sleep(1.0)
            proc.send_signal(signal.SIGUSR1)
            await asyncio.sleep(0.5)
            for _ in range(max(1, requests // 10)):
                await burst(target, 10)
            await asyncio.sleep(1.5)  # the last turns' wrap-up and event log
            proc.send_signal(signal.SIGUSR1)
            await asyncio.sleep(0.5)
            rows = [line.split(" ", 1) for line in out.read_text().splitlines()]
        finally:
            await target.close()
            proc.terminate()
            proc.wait(30)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--bin", type=Path, default=bench_api.BIN, help="hermes executable (its venv runs)")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="PostgreSQL storage + the Redis run bus: count statements and Redis writes instead",
    )
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.bin, args.postgres))
