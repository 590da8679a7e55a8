"""``hermes api`` on PostgreSQL storage: turns land in the database, ``--check`` and
``/health/detailed`` report the storage, an exhausted pool answers 503 (never a hang), a bad
server is one clear start-up error."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import openai
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from hermes_postgres.schema import SCHEMA_VERSION
from tests.api.api_helpers import HERMES, call, clean_env, start_server, write_config
from tests.timing import eventually, scaled

CONFIG = """
[agent]
provider_retries = 0
[titles]
refine = false
[storage]
backend = "postgres"
"""


def sdk(base: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=scaled(30))


async def test_turns_are_stored_in_postgres_and_health_reports_it(tmp_path: Path, pg_dsn: str) -> None:
    server = start_server(tmp_path / "home", config=CONFIG, env={"HERMES_POSTGRES_DSN": pg_dsn})
    try:

        def chat() -> str:
            done = sdk(server.base, server.key).chat.completions.create(
                model="hermes-agent",
                messages=[{"role": "user", "content": "hello postgres"}],
                extra_headers={"X-Hermes-Session-Id": "pg-session-1"},
            )
            return done.choices[0].message.content or ""

        assert await asyncio.to_thread(chat) == "You said: hello postgres"
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            cur = await conn.execute(
                "SELECT role, content FROM hermes_messages WHERE session_id = 'pg-session-1' ORDER BY id"
            )
            assert await cur.fetchall() == [
                ("user", "hello postgres"),
                ("assistant", "You said: hello postgres"),
            ]

        parts = conninfo_to_dict(pg_dsn)
        log = await eventually(lambda: "Run bus:" in "".join(server.log) and "".join(server.log))
        assert f"Storage: postgres at {parts['host']}:{parts['port']}/{parts['dbname']}" in log
        assert str(parts["password"]) not in log  # the start-up lines never show the password

        health = await call(server, "GET", "/health/detailed")
        assert health.status == 200
        storage = health.json["readiness"]["checks"]["storage"]
        assert storage["ok"] is True and storage["backend"] == "postgres"
        assert storage["schema_version"] == SCHEMA_VERSION and storage["pool"]["max"] == 10
        assert storage["server"].startswith("127.0.0.1:") and "password" not in health.text
    finally:
        server.stop()


async def test_an_exhausted_pool_is_a_clear_503_not_a_hang(tmp_path: Path, pg_dsn: str) -> None:
    config = CONFIG + "pool_size = 1\npool_timeout_s = 0.5\n"
    server = start_server(tmp_path / "home", config=config, env={"HERMES_POSTGRES_DSN": pg_dsn})
    blocker = await psycopg.AsyncConnection.connect(pg_dsn)
    try:
        await blocker.execute("LOCK TABLE hermes_sessions IN ACCESS EXCLUSIVE MODE")
        # This request's storage read waits on the lock, holding the pool's only connection.
        stuck = asyncio.create_task(call(server, "GET", "/health/detailed", timeout=scaled(60)))

        async def waiting() -> bool:
            async with await psycopg.AsyncConnection.connect(pg_dsn) as monitor:
                cur = await monitor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
                row = await cur.fetchone()
                return bool(row and row[0])

        await eventually(waiting, what="the server's storage read waiting on the lock")

        def chat() -> openai.APIStatusError:
            with pytest.raises(openai.APIStatusError) as failure:
                sdk(server.base, server.key).chat.completions.create(
                    model="hermes-agent", messages=[{"role": "user", "content": "anyone there?"}]
                )
            return failure.value

        started = time.monotonic()
        error = await asyncio.to_thread(chat)
        assert time.monotonic() - started < scaled(10)
        assert error.status_code == 503
        assert error.response.headers["Retry-After"] == "1"
        assert error.response.headers["X-Should-Retry"] == "true"
        body = error.response.json()["error"]
        assert body["code"] == "storage_unavailable" and "try again" in body["message"]

        health = await call(server, "GET", "/health/detailed", timeout=scaled(30))
        assert health.status == 503 and health.json["status"] == "degraded"
        storage = health.json["readiness"]["checks"]["storage"]
        assert storage["ok"] is False and storage["error"] == "StorageUnavailable"
        assert "no free PostgreSQL connection" in storage["message"]

        await blocker.rollback()
        first = await asyncio.wait_for(stuck, scaled(30))
        assert first.status == 200  # the waiting request finished once the lock went

        def chat_ok() -> str:
            done = sdk(server.base, server.key).chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "back again"}]
            )
            return done.choices[0].message.content or ""

        assert await asyncio.to_thread(chat_ok) == "You said: back again"
    finally:
        await blocker.close()
        server.stop()


def run_hermes(home: Path, *args: str, dsn: str | None) -> subprocess.CompletedProcess[str]:
    env = clean_env(home, {"HERMES_POSTGRES_DSN": dsn} if dsn else None)
    return subprocess.run(
        [HERMES, *args], env=env, cwd=str(home), capture_output=True, text=True, timeout=scaled(60)
    )


def test_check_reports_the_storage(tmp_path: Path, pg_dsn: str) -> None:
    home = tmp_path / "home"
    write_config(home, CONFIG)

    done = run_hermes(home, "api", "--check", dsn=pg_dsn)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0].startswith("ok   storage (postgres): 127.0.0.1:")
        and f"(schema {SCHEMA_VERSION}, pool" in lines[0]
    )
    assert lines[-1] == "Hermes API check: OK"


@pytest.mark.parametrize("problem", ["no-dsn", "wrong-password", "no-server"])
def test_a_missing_or_wrong_server_is_one_clear_start_up_error(
    tmp_path: Path, pg_dsn: str, problem: str
) -> None:
    home = tmp_path / "home"
    write_config(home, CONFIG)
    secret = "hunter2-secret-pw"
    if problem == "no-dsn":
        dsn = None
        expected = "HERMES_POSTGRES_DSN or storage.dsn"
    elif problem == "wrong-password":
        dsn = make_conninfo(pg_dsn, password=secret)
        expected = "password authentication failed"
    else:
        dsn = make_conninfo(pg_dsn, host="127.0.0.1", port="1", password=secret)
        expected = "check that PostgreSQL is running"

    done = run_hermes(home, "api", "--port", "0", dsn=dsn)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and expected in errors[0], done.stderr
    assert secret not in done.stderr + done.stdout
    assert "listening on" not in done.stderr

    # --check reports a server it cannot use as a FAIL line of its report; a missing DSN is a
    # configuration error, the same single Error: line as any start-up.
    done = run_hermes(home, "api", "--check", dsn=dsn)
    assert done.returncode == (2 if problem == "no-dsn" else 1), done.stderr
    assert secret not in done.stderr + done.stdout
    if problem == "no-dsn":
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and expected in errors[0], done.stderr
    else:
        lines = done.stdout.splitlines()
        assert lines[0].startswith("FAIL storage (postgres): cannot open PostgreSQL storage at 127.0.0.1:")
        assert expected in lines[0], done.stdout
        assert lines[-1] == "Hermes API check: FAILED"
        assert "Error:" not in done.stderr and "Traceback" not in done.stderr


def test_check_reports_every_server_that_is_down_in_one_run(tmp_path: Path, pg_dsn: str) -> None:
    """A wrong database does not hide a wrong Redis: both are reported at once."""
    home = tmp_path / "home"
    write_config(home, CONFIG + '\n[bus]\nbackend = "redis"\n')
    env = clean_env(
        home,
        {
            "HERMES_POSTGRES_DSN": make_conninfo(pg_dsn, host="127.0.0.1", port="1"),
            "HERMES_REDIS_URL": "redis://127.0.0.1:1/0",
        },
    )
    done = subprocess.run(
        [HERMES, "api", "--check"], env=env, cwd=str(home), capture_output=True, text=True, timeout=scaled(60)
    )

    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FAIL storage (postgres):") and "check that PostgreSQL is running" in lines[0]
    assert lines[1].startswith("FAIL bus (redis): Redis at 127.0.0.1:1/0 is not reachable"), done.stdout
    assert lines[-1] == "Hermes API check: FAILED"
