"""Child agents through the API server (docs/reference/api-server.md#run-events, #chat-stream,
#responses-stream): run events carry ``subagent.*``, chat streams show children as tool progress,
Responses as calls."""

from __future__ import annotations

import json
from typing import Any

from tests.api.api_helpers import Server, call, parse_sse
from tests.api.test_api_runs import events, start_run, wait_run

TASKS = [{"goal": "alpha [[tokens 2]]"}, {"goal": "beta [[tokens 3]] [[delay 20]]"}]
DELEGATE = f"[[tool delegate_task {json.dumps({'tasks': TASKS})}]]"


async def test_run_events_carry_every_childs_steps(server: Server) -> None:
    run = await start_run(server, {"input": DELEGATE})
    frames = [f["data"] for f in await events(server, run["run_id"])]
    names = [f["event"] for f in frames]
    assert names[-1] == "run.completed"
    subs = [f for f in frames if f["event"].startswith("subagent.")]
    ids = {f["subagent_id"] for f in subs}
    assert len(ids) == 2
    for sub_id in ids:
        mine = [f["event"] for f in subs if f["subagent_id"] == sub_id]
        assert mine[:2] == ["subagent.spawn_requested", "subagent.start"] and mine[-1] == "subagent.complete"
        assert "subagent.progress" in mine
    completes = {f["goal"]: f for f in subs if f["event"] == "subagent.complete"}
    assert completes["alpha [[tokens 2]]"]["summary"] == "t0 t1"
    assert completes["beta [[tokens 3]] [[delay 20]]"]["summary"] == "t0 t1 t2"
    assert {(c["status"], c["depth"], c["task_count"]) for c in completes.values()} == {("completed", 1, 2)}
    first_child = min(names.index(n) for n in names if n.startswith("subagent."))
    assert names.index("tool.started") < first_child < names.index("tool.completed")


async def test_chat_stream_shows_children_as_tool_progress(server: Server) -> None:
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": DELEGATE}]}
    reply = await call(server, "POST", "/v1/chat/completions", body)
    assert reply.status == 200
    progress = [f["data"] for f in parse_sse(reply.text) if f.get("event") == "hermes.tool.progress"]
    children = [p for p in progress if p["tool"] == "subagent"]
    assert [p["status"] for p in children].count("running") == 2
    done = [p for p in children if p["status"] == "completed"]
    assert len(done) == 2 and all(p["failed"] is False and p["choices"][0]["delta"] == {} for p in done)
    assert {p["label"] for p in done} == {t["goal"] for t in TASKS}
    assert {p["toolCallId"] for p in done} == {f"subagent-{p['subagent_id']}" for p in done}
    outer = [p["status"] for p in progress if p["tool"] == "delegate_task"]
    assert outer == ["running", "completed"]


async def test_responses_show_children_as_calls_with_their_answers(server: Server) -> None:
    reply = await call(server, "POST", "/v1/responses", {"input": DELEGATE})
    assert reply.status == 200, reply.text
    output: list[dict[str, Any]] = reply.json["output"]
    calls = {i["call_id"]: i for i in output if i["type"] == "function_call" and i["name"] == "subagent"}
    results = {i["call_id"]: i["output"] for i in output if i["type"] == "function_call_output"}
    assert len(calls) == 2 and all(c["status"] == "completed" for c in calls.values())
    assert {json.loads(c["arguments"])["goal"] for c in calls.values()} == {t["goal"] for t in TASKS}
    assert sorted(results[cid] for cid in calls) == ["t0 t1", "t0 t1 t2"]
    streamed = await call(server, "POST", "/v1/responses", {"input": DELEGATE, "stream": True})
    kinds = [f["data"]["type"] for f in parse_sse(streamed.text) if isinstance(f.get("data"), dict)]
    assert kinds[-1] == "response.completed"
    added = [
        f["data"]["item"]
        for f in parse_sse(streamed.text)
        if isinstance(f.get("data"), dict) and f["data"]["type"] == "response.output_item.added"
    ]
    assert [i["name"] for i in added if i["type"] == "function_call"].count("subagent") == 2


async def test_a_childs_approval_names_the_child_and_answering_it_runs_the_childs_tool(
    server: Server,
) -> None:
    goal = '[[tool terminal {"command": "echo hermes-guard-test from-the-child"}]] check'
    run = await start_run(server, {"input": f"[[tool delegate_task {json.dumps({'goal': goal})}]]"})
    run_id = run["run_id"]
    request = await wait_run(server, run_id, lambda s: s["status"] == "waiting_for_approval")
    asked = request["approval"]
    reply = await call(
        server, "POST", f"/v1/runs/{run_id}/approval", {"request_id": asked["request_id"], "choice": "once"}
    )
    assert reply.status == 200, reply.text
    frames = [f["data"] for f in await events(server, run_id)]
    assert frames[-1]["event"] == "run.completed"
    (req,) = [f for f in frames if f["event"] == "approval.request"]
    spawned = [f for f in frames if f["event"] == "subagent.start"]
    assert req["task_id"] == spawned[0]["subagent_id"] and req["tool"] == "terminal"
    (done,) = [f for f in frames if f["event"] == "subagent.complete"]
    assert done["summary"] == "Done: hermes-guard-test from-the-child" and done["tool_calls"] == 1


async def test_a_running_child_cannot_be_driven_as_a_session_of_its_own(server: Server) -> None:
    # Slow enough (60 s) to still be running on a loaded machine when the chat request comes.
    slow = {"goal": "[[tokens 3000]] [[delay 20]] slow", "background": True}
    run = await start_run(server, {"input": f"[[tool delegate_task {json.dumps(slow)}]]"})
    frames = [f["data"] for f in await events(server, run["run_id"])]
    [start] = [f for f in frames if f["event"] == "subagent.start"]
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "take over"}]}
    reply = await call(
        server, "POST", "/v1/chat/completions", body, headers={"X-Hermes-Session-Id": start["subagent_id"]}
    )
    assert reply.status == 409, reply.text
    error = reply.json["error"]
    assert error["code"] == "session_in_use"
    assert f"running subagent of session {start['parent_id']}" in error["message"]


async def test_a_background_child_outlives_the_run_that_started_it(server: Server) -> None:
    """The run's session is released when the run ends; its background child still finishes."""
    import subprocess

    from tests.api.api_helpers import HERMES
    from tests.timing import eventually

    quick = {"goal": "[[tokens 40]] [[delay 25]] on its own", "background": True}
    run = await start_run(server, {"input": f"[[tool delegate_task {json.dumps(quick)}]]"})
    frames = [f["data"] for f in await events(server, run["run_id"])]
    assert frames[-1]["event"] == "run.completed"
    [start] = [f for f in frames if f["event"] == "subagent.start"]

    def shown() -> str:
        done = subprocess.run(
            [HERMES, "sessions", "show", start["subagent_id"]],
            env={"HERMES_HOME": str(server.home), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout

    # Its whole answer is stored: it ran to the end instead of being stopped with the run.
    await eventually(lambda: "t39" in shown(), timeout=60, interval=0.3, what="the child's whole answer")
