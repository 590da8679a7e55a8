"""Instances on one PostgreSQL database share the API server's records: an instance that starts
while another is running a run leaves that run alone (it is not "left over from a restart"), and
every instance lists it."""

from __future__ import annotations

from pathlib import Path

from tests.api.api_helpers import call, start_server
from tests.redis.conftest import Shared
from tests.redis.test_redis_instances import KEY, SLOW, config, start_run, wait_status
from tests.services import postgres_dsn


async def test_a_starting_instance_leaves_another_s_live_run_alone(tmp_path: Path, shared: Shared) -> None:
    postgres_dsn()  # the records are shared when storage is PostgreSQL
    env = {**shared.env, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=config(shared), env=env)
    b = None
    try:
        run_id = await start_run(a, SLOW)
        await wait_status(a, run_id, "running")
        b = start_server(tmp_path / "b", config=config(shared), env=env)  # starts mid-run
        listed = await call(b, "GET", "/v1/runs")
        assert listed.status == 200, listed.text
        mine = [r for r in listed.json["data"] if r["run_id"] == run_id]
        assert mine and mine[0]["status"] == "running", listed.json
        stop = await call(b, "POST", f"/v1/runs/{run_id}/stop")  # still reaches its owner
        assert stop.status == 200, stop.text
        final = await wait_status(b, run_id, "cancelled")
        assert final["last_event"] == "run.cancelled"  # stopped by the user, not settled as a left-over
        assert final.get("turn_exit_reason") != "interrupted_by_system(shutdown)"
        listed = await call(a, "GET", "/v1/runs")
        assert [r["status"] for r in listed.json["data"] if r["run_id"] == run_id] == ["cancelled"]
    finally:
        a.stop()
        if b is not None:
            b.stop()
