"""Runs: lifecycle, idempotency, events, replay, steer, approvals, stop (docs/reference/api-server.md#runs;
checks 15-23)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from tests.api.api_helpers import Server, assert_error, call, parse_sse, start_server
from tests.api.conftest import BASE_CONFIG
from tests.timing import eventually, scaled

GUARDED = '[[tool terminal {"command":"hermes-guard-test"}]] please'
SLOW_TOOL = '[[tool terminal {"command":"sleep 1"}]] work'


async def start_run(server: Server, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    reply = await call(server, "POST", "/v1/runs", body, headers=headers)
    assert reply.status == 202, reply.text
    return dict(reply.json)


async def wait_status(server: Server, run_id: str, *wanted: str, timeout: float = 10) -> dict[str, Any]:
    return await wait_run(server, run_id, lambda status: status["status"] in wanted, timeout=timeout)


async def wait_run(
    server: Server, run_id: str, check: Callable[[dict[str, Any]], bool], timeout: float = 10
) -> dict[str, Any]:
    """Poll the run's status until ``check`` holds for it; return that status."""

    async def current() -> dict[str, Any] | None:
        status = dict((await call(server, "GET", f"/v1/runs/{run_id}")).json)
        return status if check(status) else None

    found: dict[str, Any] = await eventually(current, timeout=timeout, interval=0.05, what=f"run {run_id}")
    return found


async def wait_last_event(server: Server, run_id: str, event: str) -> None:
    """Wait until the run's latest event is ``event`` (for example its tool has started)."""
    await wait_run(server, run_id, lambda status: status["last_event"] == event)


async def events(server: Server, run_id: str, **headers: str) -> list[dict[str, Any]]:
    reply = await call(server, "GET", f"/v1/runs/{run_id}/events", headers=headers)
    assert reply.status == 200, reply.text
    assert "event: " not in reply.text
    assert reply.text.rstrip().endswith(": stream closed")
    return [f for f in parse_sse(reply.text) if "data" in f]


async def test_run_accepted_then_completed(server: Server) -> None:
    channel = {"X-Hermes-Session-Key": "agent:main:ci:job-7"}
    body = {"input": "hello run", "metadata": {"ticket": "T-1"}}
    reply = await call(server, "POST", "/v1/runs", body, headers=channel)
    assert reply.headers["X-Hermes-Session-Key"] == "agent:main:ci:job-7"
    assert reply.status == 202
    body = reply.json
    assert body["run_id"].startswith("run_") and body["status"] == "started" and body["replayed"] is False
    assert reply.headers["Location"] == f"/v1/runs/{body['run_id']}"
    assert reply.headers["X-Hermes-Session-Id"] == body["session_id"]
    assert not body["session_id"].startswith("run_")
    assert reply.headers["X-Hermes-Model"] == "mock:echo"
    status = await wait_status(server, body["run_id"], "completed")
    assert status["output"] == "You said: hello run"
    assert status["completed"] is True and status["resolved_model"] == "mock:echo"
    assert status["usage"]["output_tokens"] > 0
    assert status["metadata"] == {"ticket": "T-1"}
    assert status["object"] == "hermes.run" and status["last_event"] == "run.completed"
    follow = await call(server, "POST", "/v1/runs", {"input": "again"}, headers=channel)
    assert follow.json["session_id"] == body_session(reply)


def body_session(reply: Any) -> str:
    return str(reply.json["session_id"])


async def test_bad_run_bodies(server: Server) -> None:
    assert_error(await call(server, "POST", "/v1/runs", {}), 400, "missing_required_parameter")
    assert_error(
        await call(
            server,
            "POST",
            "/v1/runs",
            {"input": "x", "session_id": "a"},
            headers={"X-Hermes-Session-Id": "b"},
        ),
        400,
        "conflicting_parameters",
    )
    assert_error(
        await call(server, "POST", "/v1/runs", {"input": ["a", "b"], "session_id": "a"}),
        400,
        "conflicting_parameters",
    )
    assert_error(
        await call(server, "POST", "/v1/runs", {"input": "x", "previous_response_id": "resp_no"}),
        404,
        "response_not_found",
    )
    assert_error(
        await call(server, "POST", "/v1/runs", {"input": "x", "model": "nonexistent-model"}),
        400,
        "model_not_found",
    )
    assert_error(
        await call(server, "POST", "/v1/runs", {"input": "x", "cwd": "/tmp"}), 400, "invalid_workspace"
    )
    assert_error(
        await call(server, "POST", "/v1/runs", {"input": "x"}, headers={"Idempotency-Key": "has space"}),
        400,
        "invalid_idempotency_key",
    )
    assert_error(await call(server, "GET", "/v1/runs/run_missing"), 404, "run_not_found")


async def test_bare_model_names_resolve_on_runs(server: Server) -> None:
    run = await start_run(server, {"input": "hey", "model": "alt"})
    status = await wait_status(server, run["run_id"], "completed")
    assert status["output"] == "alt: You said: hey"
    assert status["model"] == "alt" and status["resolved_model"] == "mock:alt"


async def test_idempotency_survives_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    srv = start_server(home, config=BASE_CONFIG)
    try:
        first = await call(srv, "POST", "/v1/runs", {"input": "once"}, headers={"Idempotency-Key": "job-42"})
        twin = await call(srv, "POST", "/v1/runs", {"input": "once"}, headers={"Idempotency-Key": "job-42"})
        assert twin.json["run_id"] == first.json["run_id"] and twin.json["replayed"] is True
        assert twin.headers["Idempotency-Replayed"] == "true"
        conflict = await call(
            srv, "POST", "/v1/runs", {"input": "other"}, headers={"Idempotency-Key": "job-42"}
        )
        assert_error(conflict, 409, "idempotency_key_conflict")
        await wait_status(srv, first.json["run_id"], "completed")
    finally:
        srv.stop()
    again = start_server(home, config=BASE_CONFIG)
    try:
        replay = await call(
            again, "POST", "/v1/runs", {"input": "once"}, headers={"Idempotency-Key": "job-42"}
        )
        assert replay.status == 202
        assert replay.json == {
            "run_id": first.json["run_id"],
            "status": "completed",
            "replayed": True,
            "session_id": first.json["session_id"],
        }
        status = (await call(again, "GET", f"/v1/runs/{first.json['run_id']}")).json
        assert status["output"] == "You said: once"
    finally:
        again.stop()


async def test_event_frames_are_numbered_and_end_with_the_terminal_event(server: Server) -> None:
    run = await start_run(server, {"input": 'x [[tool terminal {"command":"echo a"}]]'})
    frames = await events(server, run["run_id"])
    seqs = [f["data"]["seq"] for f in frames]
    assert seqs == list(range(1, len(frames) + 1))
    assert [int(f["id"]) for f in frames] == seqs
    for f in frames:
        assert {"event", "run_id", "seq", "timestamp"} <= set(f["data"])
        assert f["data"]["run_id"] == run["run_id"]
    names = [f["data"]["event"] for f in frames]
    assert names[0] == "run.started" and names[-1] == "run.completed"
    assert names.index("tool.started") < names.index("tool.completed") < names.index("message.delta")
    assert frames[-1]["data"]["pending_steer"] is None


async def test_subscribers_see_identical_sequences_even_late(server: Server) -> None:
    run = await start_run(server, {"input": "[[tokens 30]] [[delay 20]] go"})
    a, b = await asyncio.gather(events(server, run["run_id"]), events(server, run["run_id"]))
    late = await events(server, run["run_id"])
    assert [f["data"] for f in a] == [f["data"] for f in b] == [f["data"] for f in late]
    assert late[-1]["data"]["event"] == "run.completed"


async def test_reconnect_with_last_event_id_loses_and_duplicates_nothing(server: Server) -> None:
    run = await start_run(server, {"input": "[[tokens 40]] [[delay 15]] go"})
    run_id = run["run_id"]
    seen: list[int] = []
    cursor = 0
    rng = random.Random(7)
    async with aiohttp.ClientSession() as client:
        while True:
            headers = {**server.auth(), "Last-Event-ID": str(cursor)}
            async with client.get(f"{server.base}/v1/runs/{run_id}/events", headers=headers) as resp:
                if resp.status == 204:
                    break
                assert resp.status == 200
                budget = rng.randint(1, 4)
                ended = False
                async for line in resp.content:
                    if line.startswith(b"id: "):
                        cursor = int(line[4:])
                        seen.append(cursor)
                        budget -= 1
                    if line.startswith(b": stream closed"):
                        ended = True
                    if budget == 0 and not ended:
                        break
                if ended:
                    break
    assert seen == list(range(1, len(seen) + 1))
    terminal = seen[-1]
    at_end = await call(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(terminal)})
    assert at_end.status == 204
    after = await call(server, "GET", f"/v1/runs/{run_id}/events?after=3")
    assert next(f["data"]["seq"] for f in parse_sse(after.text) if "data" in f) == 4
    assert_error(
        await call(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "abc"}),
        400,
        "invalid_last_event_id",
    )
    assert_error(
        await call(server, "GET", f"/v1/runs/{run_id}/events?after=-1"), 400, "invalid_last_event_id"
    )
    for bad in ("²", "1" * 19, "99999999999999999999999"):
        assert_error(
            await call(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": bad}),
            400,
            "invalid_last_event_id",
        )
    past = await call(
        server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(terminal + 5)}
    )
    frames = parse_sse(past.text)
    assert past.status == 200 and [f["data"]["seq"] for f in frames if "data" in f] == [terminal]
    assert past.text.rstrip().endswith(": stream closed")


async def test_journal_overflow_yields_a_gap_then_newest_events(make_server: Callable[..., Server]) -> None:
    srv = make_server("[api_server]\nrun_journal_events = 20\n")
    run = await start_run(srv, {"input": '[[tool terminal {"command":"echo a"}]] [[rounds 30]] go'})
    await wait_status(srv, run["run_id"], "completed")
    frames = await events(srv, run["run_id"])
    gap = frames[0]["data"]
    assert gap["event"] == "stream.gap" and "id" not in frames[0]
    assert gap["from_seq"] == 1
    retained = [f["data"]["seq"] for f in frames[1:]]
    assert retained[0] == gap["to_seq"] + 1 and len(retained) == 20
    assert frames[-1]["data"]["event"] == "run.completed"
    assert frames[-1]["data"]["output"].startswith("Done: a")


async def test_steer_rules_and_delivery(server: Server) -> None:
    run = await start_run(server, {"input": SLOW_TOOL})
    run_id = run["run_id"]
    await wait_last_event(server, run_id, "tool.started")
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/steer", {"input": ""}), 400, "invalid_steer_input"
    )
    steer = await call(server, "POST", f"/v1/runs/{run_id}/steer", {"input": "use fewer words"})
    assert steer.status == 200
    assert steer.json == {"object": "hermes.run.steer", "run_id": run_id, "accepted": True}
    status = await wait_status(server, run_id, "completed")
    assert status["output"].endswith(" / Steer: use fewer words")
    names = [f["data"]["event"] for f in await events(server, run_id)]
    assert names.index("run.steered") < names.index("run.steer_delivered")
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/steer", {"input": "late"}),
        409,
        "run_not_accepting_steer",
    )


async def test_late_steer_becomes_pending_steer_on_completed_and_cancelled(server: Server) -> None:
    run = await start_run(server, {"input": "[[tokens 15]] [[delay 40]] go"})
    await wait_last_event(server, run["run_id"], "message.delta")
    assert (
        await call(server, "POST", f"/v1/runs/{run['run_id']}/steer", {"message": "too late"})
    ).status == 200
    done = await wait_status(server, run["run_id"], "completed")
    assert done["pending_steer"] == "too late"
    stopped = await start_run(server, {"input": "[[tokens 200]] [[delay 30]] go"})
    await wait_last_event(server, stopped["run_id"], "message.delta")
    assert (
        await call(server, "POST", f"/v1/runs/{stopped['run_id']}/steer", {"text": "keep it"})
    ).status == 200
    assert (await call(server, "POST", f"/v1/runs/{stopped['run_id']}/stop")).json["status"] == "stopping"
    cancelled = await wait_status(server, stopped["run_id"], "cancelled")
    assert cancelled["pending_steer"] == "keep it"
    assert (await events(server, stopped["run_id"]))[-1]["data"]["pending_steer"] == "keep it"


async def test_approval_flow_and_errors(server: Server) -> None:
    run = await start_run(server, {"input": GUARDED})
    run_id = run["run_id"]
    waiting = await wait_status(server, run_id, "waiting_for_approval")
    approval = waiting["approval"]
    assert approval["tool"] == "terminal" and "once" in approval["choices"]
    assert isinstance(approval["expires_at"], float)
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/steer", {"input": "x"}), 409, "run_not_accepting_steer"
    )
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": "maybe"}),
        400,
        "invalid_approval_choice",
    )
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": "once", "all": "yes"}),
        400,
        "invalid_approval_request",
    )
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": "once", "request_id": "nope"}),
        409,
        "approval_not_pending",
    )
    ok = await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": "APPROVE"})
    assert ok.status == 200
    assert (
        ok.json["resolved"] == 1
        and ok.json["choice"] == "once"
        and ok.json["request_id"] == approval["request_id"]
    )
    # Answered: a second answer is refused; the run may already have finished meanwhile.
    again = await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": "once"})
    assert again.status == 409, again.text
    assert again.json["error"]["code"] in ("approval_not_pending", "approval_not_active"), again.text
    await wait_status(server, run_id, "completed")
    names = [f["data"]["event"] for f in await events(server, run_id)]
    assert names.index("tool.started") < names.index("approval.request") < names.index("approval.responded")
    assert_error(
        await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": "once"}),
        409,
        "approval_not_active",
    )


async def test_approval_timeout_expires_and_denies(make_server: Callable[..., Server]) -> None:
    srv = make_server("[approvals]\ntimeout_s = 1\n")
    run = await start_run(srv, {"input": GUARDED})
    await wait_status(srv, run["run_id"], "completed", timeout=10)
    frames = await events(srv, run["run_id"])
    expired = [f["data"] for f in frames if f["data"]["event"] == "approval.expired"]
    assert expired and expired[0]["reason"] == "timeout"
    completed = [f["data"] for f in frames if f["data"]["event"] == "tool.completed"]
    assert completed[0]["error"] is True


async def test_stop_running_queued_and_terminal_runs(server: Server) -> None:
    session = {"session_id": "stop-session"}
    running = await start_run(server, {"input": "[[tokens 300]] [[delay 20]] go", **session})
    queued = await start_run(server, {"input": "next one", **session})
    await wait_status(server, running["run_id"], "running")
    assert (await call(server, "GET", f"/v1/runs/{queued['run_id']}")).json["status"] == "queued"
    assert_error(
        await call(server, "POST", f"/v1/runs/{queued['run_id']}/steer", {"input": "x"}),
        409,
        "run_not_accepting_steer",
    )
    stop_q = await call(server, "POST", f"/v1/runs/{queued['run_id']}/stop")
    assert stop_q.json == {"run_id": queued["run_id"], "status": "cancelled"}
    started = asyncio.get_running_loop().time()
    stop_r = await call(server, "POST", f"/v1/runs/{running['run_id']}/stop")
    assert stop_r.json == {"run_id": running["run_id"], "status": "stopping"}
    status = await wait_status(server, running["run_id"], "cancelled", timeout=2)
    assert asyncio.get_running_loop().time() - started < scaled(1.0)
    assert status["turn_exit_reason"] == "interrupted_by_user" and status["completed"] is False
    terminal = await call(server, "POST", f"/v1/runs/{running['run_id']}/stop")
    assert terminal.json["status"] == "cancelled" and terminal.json["object"] == "hermes.run"
    names = [f["data"]["event"] for f in await events(server, running["run_id"])]
    assert names[-2:] == ["run.stopping", "run.cancelled"] or names[-1] == "run.cancelled"
    again = await start_run(server, {"input": "after stop", **session})
    assert (await wait_status(server, again["run_id"], "completed"))["output"] == "You said: after stop"


async def test_stop_inside_a_tool_cancels_within_a_second(server: Server) -> None:
    run = await start_run(server, {"input": '[[tool terminal {"command":"sleep 5"}]] x'})
    await wait_last_event(server, run["run_id"], "tool.started")
    started = asyncio.get_running_loop().time()
    await call(server, "POST", f"/v1/runs/{run['run_id']}/stop")
    await wait_status(server, run["run_id"], "cancelled", timeout=3)
    assert asyncio.get_running_loop().time() - started < scaled(1.5)


async def test_restart_reconciles_unsettled_runs_to_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    srv = start_server(home, config=BASE_CONFIG + "[api_server]\nshutdown_grace_s = 0\n")
    try:
        run = await start_run(srv, {"input": "[[tokens 500]] [[delay 20]] go"})
        await wait_status(srv, run["run_id"], "running")
    finally:
        assert srv.stop() == 0
    again = start_server(home, config=BASE_CONFIG)
    try:
        status = (await call(again, "GET", f"/v1/runs/{run['run_id']}")).json
        assert status["status"] == "interrupted" and status["completed"] is False
        frames = await events(again, run["run_id"])
        assert frames[-1]["data"]["event"] == "run.interrupted"
    finally:
        again.stop()


async def test_a_run_waiting_for_approval_does_not_hold_the_drain_for_the_whole_grace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    srv = start_server(home, config=BASE_CONFIG + "[api_server]\nshutdown_grace_s = 120\n")
    try:
        run = await start_run(srv, {"input": '[[tool terminal {"command":"hermes-guard-test"}]] go'})
        await wait_status(srv, run["run_id"], "waiting_for_approval")
        started = time.monotonic()
        assert srv.stop(timeout=scaled(60)) == 0  # nobody will answer: interrupted at once, not after 120 s
        assert time.monotonic() - started < scaled(30)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    again = start_server(home, config=BASE_CONFIG)
    try:
        status = (await call(again, "GET", f"/v1/runs/{run['run_id']}")).json
        assert status["status"] in ("cancelled", "interrupted") and status["completed"] is False, status
    finally:
        again.stop()


async def test_concurrent_twins_with_one_idempotency_key_create_one_run(tmp_path: Path) -> None:
    """Twins sent at the same moment: one run per key, the others replay it (never a second run)."""
    srv = start_server(tmp_path / "home", config=BASE_CONFIG)
    try:
        for n in range(8):
            headers = {"Idempotency-Key": f"burst-{n}"}
            replies = await asyncio.gather(
                *(call(srv, "POST", "/v1/runs", {"input": f"burst {n}"}, headers=headers) for _ in range(4))
            )
            assert all(r.status == 202 for r in replies), [r.text for r in replies]
            assert len({r.json["run_id"] for r in replies}) == 1, [r.json for r in replies]
            assert sorted(r.json["replayed"] for r in replies) == [False, True, True, True]
    finally:
        srv.stop()
