"""The mock enforces a scenario's ``expect`` (docs/reference/scenarios.md#expected-questions): a host
that answers differently, or leaves a question unanswered, gets a failed turn whose error names
the scenario file, the step's line and what differed — in process, on the TUI gateway and on the
API server's runs (ACP: tests/acp/test_scenario_expect.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_core.scenarios import SHIPPED_DIR
from hermes_core.scenarios.transcript import run_prompts
from tests.api.api_helpers import call, parse_sse, start_server
from tests.timing import eventually, scaled
from tests.tui.client import TuiProcess

APPROVAL = SHIPPED_DIR / "approval.toml"
CLARIFY = SHIPPED_DIR / "clarify.toml"


def _settings(path: Path) -> dict[str, Any]:
    return {
        "model": f"mock:scenario:{path}",
        "providers": {"mock": {"time_scale": 0}},
        "titles": {"refine": False},
    }


def _outcomes(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line["outcome"] for line in lines if line["event"] == "TurnCompleted"]


async def test_the_expected_answers_pass(tmp_path: Path) -> None:
    answers = [("approval", "once"), ("approval", "deny")]
    lines = await run_prompts(_settings(APPROVAL), ["a", "b"], answers, workspace=tmp_path)
    assert [o["status"] for o in _outcomes(lines)] == ["complete", "complete"]


async def test_another_approval_answer_fails_the_turn_naming_file_and_step(tmp_path: Path) -> None:
    answers = [("approval", "deny"), ("approval", "deny")]
    lines = await run_prompts(_settings(APPROVAL), ["a", "b"], answers, workspace=tmp_path)
    first, second = _outcomes(lines)
    assert first["status"] == "error" and first["reason"] == "provider_error"
    assert first["message"] == (
        f"scenario {APPROVAL}:10: turn 1 step 1: expect[0] (approval, answer 'once'): "
        "the host answered 'deny'"
    )
    assert second["status"] == "complete"  # the second turn was answered as expected


async def test_another_clarify_answer_fails_the_turn(tmp_path: Path) -> None:
    lines = await run_prompts(_settings(CLARIFY), ["a"], [("clarify", "Go")], workspace=tmp_path)
    (outcome,) = _outcomes(lines)
    assert outcome["status"] == "error"
    assert outcome["message"].startswith(
        f"scenario {CLARIFY}:10: turn 1 step 1: expect[0] (clarify, answer 'Python'): "
        "the host's answer was not"
    )


async def test_a_question_the_step_does_not_expect_fails_the_turn(tmp_path: Path) -> None:
    path = tmp_path / "unexpected.toml"
    path.write_text(
        '[[turns]]\nuser = "go"\n  [[turns.steps]]\n'
        '  tool_calls = [{ name = "terminal", arguments = { command = "rm -rf scenario-x" } }]\n'
        '  [[turns.steps]]\n  text = "done"\n',
        encoding="utf-8",
    )
    lines = await run_prompts(_settings(path), ["go"], [("approval", "once")], workspace=tmp_path)
    (outcome,) = _outcomes(lines)
    assert outcome["message"] == (
        f"scenario {path}:3: turn 1 step 1: the host was asked a approval question the step does not expect"
    )


def test_on_the_tui_gateway_a_wrong_answer_ends_the_turn_with_the_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with TuiProcess(home, env={"HERMES_MODEL": f"mock:scenario:{APPROVAL}"}) as tui:
        sid = tui.create()
        tui.call("prompt.submit", session_id=sid, text="Clean the build directory")
        request = tui.wait_event(sid, "approval.request", timeout=scaled(15))
        tui.call(
            "approval.respond", session_id=sid, choice="always", request_id=request["payload"]["request_id"]
        )
        done = tui.wait_complete(sid, timeout=scaled(15))
    assert done["status"] == "error"
    assert done["error"]["message"] == (
        f"scenario {APPROVAL}:10: turn 1 step 1: expect[0] (approval, answer 'once'): "
        "the host answered 'always'"
    )


def test_on_the_tui_gateway_an_unanswered_question_ends_the_turn_with_the_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[approvals]\ntimeout_s = 0.5\n", encoding="utf-8")
    with TuiProcess(home, env={"HERMES_MODEL": f"mock:scenario:{APPROVAL}"}) as tui:
        sid = tui.create()
        tui.call("prompt.submit", session_id=sid, text="Clean the build directory")
        tui.wait_event(sid, "approval.request", timeout=scaled(15))
        done = tui.wait_complete(sid, timeout=scaled(15))
    assert done["error"]["message"] == (
        f"scenario {APPROVAL}:10: turn 1 step 1: expect[0] (approval, answer 'once'): "
        "the question was not answered (timeout)"
    )


@pytest.mark.parametrize(("choice", "status"), [("once", "completed"), ("session", "failed")])
async def test_on_the_api_runs_a_wrong_answer_fails_the_run(tmp_path: Path, choice: str, status: str) -> None:
    server = start_server(tmp_path / "home", env={"HERMES_MODEL": f"mock:scenario:{APPROVAL}"})
    try:
        created = await call(server, "POST", "/v1/runs", {"input": "Clean the build directory"})
        run_id = created.json["run_id"]

        async def asking() -> bool:
            reply = await call(server, "GET", f"/v1/runs/{run_id}")
            return bool(reply.json["status"] == "waiting_for_approval")

        await eventually(asking, timeout=15, what="the approval request")
        await call(server, "POST", f"/v1/runs/{run_id}/approval", {"choice": choice})

        async def settled() -> dict[str, Any] | None:
            reply = await call(server, "GET", f"/v1/runs/{run_id}")
            body: dict[str, Any] = reply.json
            return body if body["status"] in ("completed", "failed") else None

        body = await eventually(settled, timeout=15, what="the run to end")
        events = (await call(server, "GET", f"/v1/runs/{run_id}/events")).text
    finally:
        server.stop()
    assert body["status"] == status, json.dumps(body)
    if status == "failed":
        expected = (
            f"scenario {APPROVAL}:10: turn 1 step 1: expect[0] (approval, answer 'once'): "
            "the host answered 'session'"
        )
        assert body["error"] == expected
        data = [f["data"] for f in parse_sse(events) if isinstance(f.get("data"), dict)]
        assert [d["error"] for d in data if d["event"] == "run.failed"] == [expected]


async def test_a_child_agents_step_is_checked_in_the_child(tmp_path: Path) -> None:
    path = tmp_path / "child.toml"
    path.write_text(
        '[[turns]]\nuser = "go"\n  [[turns.steps]]\n'
        '  tool_calls = [{ name = "delegate_task", arguments = { goal = "Clean up" } }]\n'
        '  [[turns.steps]]\n  text = "Done."\n\n'
        '[[subagents]]\ngoal = "Clean up"\n  [[subagents.steps]]\n'
        '  tool_calls = [{ name = "terminal", arguments = { command = "rm -rf scenario-sub" } }]\n'
        '  expect = [{ kind = "approval", answer = "once" }]\n'
        '  [[subagents.steps]]\n  text = "Cleaned."\n',
        encoding="utf-8",
    )

    async def delegate_result(answer: str) -> dict[str, Any]:
        workspace = tmp_path / answer
        workspace.mkdir()
        lines = await run_prompts(_settings(path), ["go"], [("approval", answer)], workspace=workspace)
        done = next(line for line in lines if line["event"] == "ToolCompleted")
        result: dict[str, Any] = json.loads(done["result_text"])["results"][0]
        return result

    assert (await delegate_result("once"))["status"] == "completed"
    failed = await delegate_result("deny")
    assert failed["status"] == "error"
    assert failed["error"] == (
        f"scenario {path}:10: subagent 1 step 1: expect[0] (approval, answer 'once'): "
        "the host answered 'deny'"
    )


async def test_a_retried_step_is_judged_like_its_first_attempt(tmp_path: Path) -> None:
    path = tmp_path / "retry.toml"
    path.write_text(
        '[[turns]]\nuser = "go"\n  [[turns.steps]]\n'
        '  tool_calls = [{ name = "terminal", arguments = { command = "rm -rf scenario-retry" } }]\n'
        '  expect = [{ kind = "approval", answer = "once" }]\n'
        '  [[turns.steps]]\n  text = "done"\n'
        '  error = { kind = "rate_limit", message = "slow", retryable = true, times = 1 }\n',
        encoding="utf-8",
    )
    for answer, status in (("once", "complete"), ("deny", "error")):
        workspace = tmp_path / answer
        workspace.mkdir()
        lines = await run_prompts(_settings(path), ["go"], [("approval", answer)], workspace=workspace)
        (outcome,) = _outcomes(lines)
        assert outcome["status"] == status, outcome
