"""``GET /v1/runs``: the key's newest runs, live and stored, newest first
(docs/reference/api-server.md#run-status)."""

from __future__ import annotations

from tests.api.api_helpers import Server, assert_error, call
from tests.api.test_api_runs import start_run, wait_status


async def test_the_key_s_runs_newest_first_with_a_limit(server: Server) -> None:
    started = []
    for i in range(3):
        run = await start_run(server, {"input": f"list me {i}"})
        await wait_status(server, run["run_id"], "completed")
        started.append(run["run_id"])
    listing = await call(server, "GET", "/v1/runs")
    assert listing.status == 200, listing.text
    assert listing.json["object"] == "list"
    assert [r["run_id"] for r in listing.json["data"]] == started[::-1]
    assert {r["status"] for r in listing.json["data"]} == {"completed"}
    assert all("terminal_event" not in r for r in listing.json["data"])
    two = await call(server, "GET", "/v1/runs?limit=2")
    assert [r["run_id"] for r in two.json["data"]] == started[:0:-1]


async def test_a_bad_limit_is_a_clear_400(server: Server) -> None:
    for bad in ("0", "101", "x", "-1"):
        err = assert_error(await call(server, "GET", f"/v1/runs?limit={bad}"), 400, "invalid_value")
        assert err["param"] == "limit"
    assert (await call(server, "GET", "/v1/runs", auth=False)).status == 401
