"""Scale-out TTFT budget (docs/deploy.md): time to the first streamed token at c=1 through nginx
in front of three ``hermes api`` instances on PostgreSQL storage and the Redis run bus, against
one ``hermes api`` on its SQLite file, both through the ``openai`` provider's custom-provider path
to a fake upstream on loopback (the one of ``bench/bench_api.py``).

Needs a PostgreSQL server (a private schema is created and dropped), a Redis database whose
``hermes:`` keys may be written, and nginx — as ``.ci/run`` provides them:
``HERMES_TEST_POSTGRES_DSN=... HERMES_TEST_REDIS_URL=... HERMES_TEST_NGINX=/usr/sbin/nginx
.venv/bin/python bench/bench_scaleout.py``. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_api import BIN, Target, free_port, pct  # noqa: E402

from tests.nginx_front import start_nginx  # noqa: E402  (the configuration docs/deploy.md shows)

KEY = "hk_" + secrets.token_urlsafe(32)


def need(*names: str) -> str:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    sys.exit(f"bench_scaleout: set {' or '.join(names)}")


def start(
    home: Path, fake_port: int, extra_config: str, env_extra: dict[str, str]
) -> tuple[subprocess.Popen[str], int]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "fake:fake-t1-d0"\n[titles]\nrefine = false\n[compression]\nauto_threshold = 0\n'
        f'[[providers.custom]]\nname = "fake"\nbase_url = "http://127.0.0.1:{fake_port}/v1"\n' + extra_config
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env.update(HERMES_HOME=str(home), API_SERVER_KEY=KEY, **env_extra)
    proc = subprocess.Popen([str(BIN), "api", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    port = 0
    for line in proc.stderr:
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
            break
    if not port:
        sys.exit(f"hermes api in {home} did not start")
    threading.Thread(target=lambda: [None for _ in proc.stderr or ()], daemon=True).start()
    return proc, port


async def c1(target: Target, rounds: int) -> list[float]:
    out = []
    for i in range(rounds):
        first, _, _ = await target.stream(None, "fake-t5-d0", f"bench {time.time_ns()} {i}")
        out.append(first * 1000)
    return out


async def main(rounds: int, synchronous_commit: str) -> None:
    import psycopg
    import redis.asyncio as aioredis

    dsn = need("HERMES_POSTGRES_DSN", "HERMES_TEST_POSTGRES_DSN")
    url = need("HERMES_REDIS_URL", "HERMES_TEST_REDIS_URL")
    nginx = (
        os.environ.get("HERMES_TEST_NGINX", "").strip() or shutil.which("nginx") or need("HERMES_TEST_NGINX")
    )
    schema = f"bench_{secrets.token_hex(5)}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}")
    client = aioredis.from_url(url)
    await client.flushdb()
    await client.aclose()
    fake_port = free_port()
    fake = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "bench_api.py"), "--fake", str(fake_port)]
    )
    procs: list[subprocess.Popen[str]] = []
    front: subprocess.Popen[bytes] | None = None
    try:
        await asyncio.sleep(1.0)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            single, single_port = start(root / "single", fake_port, "", {})
            procs.append(single)
            from psycopg.conninfo import make_conninfo

            options = f"-c search_path={schema} -c synchronous_commit={synchronous_commit}"
            shared_env = {
                "HERMES_POSTGRES_DSN": make_conninfo(dsn, options=options),
                "HERMES_REDIS_URL": url,
            }
            shared_config = '[storage]\nbackend = "postgres"\n[bus]\nbackend = "redis"\n'
            ports = []
            for i in range(3):
                proc, port = start(root / f"i{i}", fake_port, shared_config, shared_env)
                procs.append(proc)
                ports.append(port)
            nport = free_port()
            front = start_nginx(nginx, root / "nginx", ports, nport)
            await asyncio.sleep(1.0)
            base = Target(f"http://127.0.0.1:{single_port}/v1/chat/completions", KEY, "fake:")
            scaled = Target(f"http://127.0.0.1:{nport}/v1/chat/completions", KEY, "fake:")
            member = Target(f"http://127.0.0.1:{ports[0]}/v1/chat/completions", KEY, "fake:")
            for target in (base, scaled, member):
                await c1(target, 10)  # warm up: imports, pooled connections, every instance
            one: list[float] = []
            three: list[float] = []
            direct: list[float] = []
            for _ in range(rounds // 10):  # interleaved, so machine noise hits all alike
                one += await c1(base, 10)
                three += await c1(scaled, 10)
                direct += await c1(member, 10)
            for target in (base, scaled, member):
                await target.close()
    finally:
        if front is not None:
            front.terminate()
            front.wait(10)
        for proc in procs:
            proc.terminate()
            proc.wait(20)
        fake.terminate()
        fake.wait(10)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")
    m1, m3 = statistics.median(one), statistics.median(three)
    print(f"{'TTFT c=1, ' + str(len(one)) + ' requests each':<52} {'median ms':>10} {'p95 ms':>10}")
    print(f"{'one hermes api, SQLite, direct':<52} {m1:>10.2f} {pct(one, 0.95):>10.2f}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"PostgreSQL synchronous_commit={synchronous_commit}; load average {load} ({os.cpu_count()} cores)")
    print(f"{'nginx -> 3 hermes api, PostgreSQL + Redis bus':<52} {m3:>10.2f} {pct(three, 0.95):>10.2f}")
    print(
        f"{'  (breakdown) one of them, direct, no nginx':<52} {statistics.median(direct):>10.2f} "
        f"{pct(direct, 0.95):>10.2f}"
    )
    print(f"{'added by the scale-out path (budget <= +3 ms median)':<52} {m3 - m1:>+10.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200, help="requests per configuration")
    parser.add_argument(
        "--synchronous-commit",
        default="on",
        choices=["on", "off"],
        help="the instances' PostgreSQL synchronous_commit (off is like SQLite's WAL + synchronous=NORMAL)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.synchronous_commit))
