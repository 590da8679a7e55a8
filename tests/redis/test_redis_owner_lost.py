"""A run whose owner was killed (``kill -9``) ends one way everywhere: ``run.failed`` with
``error_code`` ``owner_lost`` on its event stream, in ``GET /v1/runs/{id}``, in ``GET /v1/runs``
and in the durable record in PostgreSQL — read through a surviving instance and through one
started after the kill."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from tests.api.api_helpers import Server, call, start_server
from tests.redis.conftest import Shared
from tests.redis.stream_checks import check_stream
from tests.redis.test_redis_instances import KEY, SLOW, Events, config, instances, start_run, wait_status
from tests.services import postgres_dsn


async def durable(shared: Shared, run_id: str) -> tuple[bool, dict[str, Any]]:
    """Return (terminal, status) of the run's record in the shared database (the kernel's
    ``hermes_records``, namespace ``api.runs``)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(shared.env["HERMES_POSTGRES_DSN"]) as conn:
        cur = await conn.execute(
            "SELECT data FROM hermes_records WHERE namespace='api.runs' AND key=%s", (run_id,)
        )
        row = await cur.fetchone()
    assert row is not None, run_id
    value = json.loads(row[0])
    return bool(value["terminal"]), value["status"]


async def one_story(server: Server, run_id: str, record: dict[str, Any]) -> None:
    """Assert that ``server`` tells the ending the durable ``record`` holds."""
    end = record["terminal_event"]
    assert (record["status"], record["error_code"], end["event"]) == ("failed", "owner_lost", "run.failed")
    status = (await call(server, "GET", f"/v1/runs/{run_id}")).json
    assert {k: v for k, v in status.items() if k != "updated_at"} == {
        k: v for k, v in record.items() if k not in ("updated_at", "terminal_event", "log")
    }
    listing = (await call(server, "GET", "/v1/runs")).json["data"]
    listed = next(r for r in listing if r["run_id"] == run_id)
    assert (listed["status"], listed["error_code"], listed["last_seq"]) == (
        "failed",
        "owner_lost",
        end["seq"],
    )
    async with Events(server, run_id) as stream:
        frames = await stream.until("run.failed")
    assert frames[-1]["id"] == end["seq"] and frames[-1]["data"] == end
    # Nothing repeated, nothing skipped without a stream.gap (the seqs the owner had reserved for
    # its own readers and never sent are one).
    check_stream(frames)


async def test_a_killed_owners_runs_end_with_owner_lost_everywhere(tmp_path: Path, shared: Shared) -> None:
    postgres_dsn()  # the durable records are shared when storage is PostgreSQL
    a, b = instances(tmp_path, shared)
    late: Server | None = None
    try:
        watched = await start_run(a, SLOW)
        untouched = await start_run(a, SLOW)  # nobody asks about it until a new instance started
        async with Events(b, watched) as stream:
            await stream.until("message.delta")
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait(10)
            end = (await stream.until("run.failed"))[-1]
        assert end["data"]["error_code"] == "owner_lost"

        status = await wait_status(b, watched, "failed", "interrupted")
        assert (status["status"], status["error_code"]) == ("failed", "owner_lost")
        terminal, record = await durable(shared, watched)
        assert terminal and record["terminal_event"] == end["data"]

        late = start_server(
            tmp_path / "late", config=config(shared), env={**shared.env, "API_SERVER_KEY": KEY}
        )
        terminal, record = await durable(shared, untouched)  # settled by the new instance's start-up
        assert terminal, record
        for run_id in (watched, untouched):
            _, record = await durable(shared, run_id)
            for server in (b, late):
                await one_story(server, run_id, record)
    finally:
        a.stop(signal.SIGKILL)
        b.stop()
        if late is not None:
            late.stop()
