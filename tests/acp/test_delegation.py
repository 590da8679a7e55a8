"""Child agents over ACP (docs/reference/acp.md#subagents): each child is a tool call of kind
``other`` with its progress, its approvals are permission requests on that call, and
``session/load`` replays the children."""

from __future__ import annotations

import json
from typing import Any

from tests.acp.client import RecordingClient
from tests.acp.conftest import Home
from tests.acp.helpers import calls, content_text, final, tool


def children(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {k: v for k, v in calls(updates).items() if k.startswith("subagent-")}


async def test_each_child_is_a_tool_call_and_is_replayed(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    tasks = [{"goal": "first [[tokens 3]]"}, {"goal": "second [[tokens 2]] [[delay 30]]"}]
    result = await agent.prompt(sid, tool("delegate_task", tasks=tasks))
    assert result["stopReason"] == "end_turn"
    live = children(agent.updates(sid))
    assert len(live) == 2
    summaries = set()
    for events in live.values():
        announced = events[0]
        assert announced["sessionUpdate"] == "tool_call" and announced["kind"] == "other"
        assert announced["status"] == "pending" and announced["title"].startswith("Subagent: ")
        assert announced["rawInput"]["goal"] in {t["goal"] for t in tasks}
        statuses = [u["status"] for u in events[1:] if u.get("status")]
        assert statuses == ["in_progress", "completed"], events
        done = final(events)
        summaries.add(content_text(done))
        assert done["rawOutput"]["status"] == "completed"
    assert summaries == {"t0 t1 t2", "t0 t1"}
    # The parent's own delegate_task call is there too, with the JSON result.
    [parent_events] = [v for k, v in calls(agent.updates(sid)).items() if k not in live]
    assert parent_events[0]["title"] == "Delegate 2 tasks" and parent_events[0]["kind"] == "other"
    body = json.loads(content_text(final(parent_events)))
    assert {f"subagent-{r['subagent_id']}" for r in body["results"]} == set(live)
    await agent.request("session/close", {"sessionId": sid})

    second = await spawn(initialize={})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    replayed = children(second.updates(sid))
    assert set(replayed) == set(live)
    for events in replayed.values():
        assert events[0]["kind"] == "other" and events[0]["rawInput"]["goal"] in {t["goal"] for t in tasks}
        assert final(events)["status"] == "completed"
    assert {content_text(final(e)) for e in replayed.values()} == summaries


async def test_a_childs_approval_is_a_permission_request_on_its_call(spawn: Any, home: Home) -> None:
    client = RecordingClient()
    client.permission_answers = ["allow_once"]
    agent = await spawn(client=client, initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    write = tool("write_file", path="child.txt", content="made by a child")
    result = await agent.prompt(sid, tool("delegate_task", goal=write))
    assert result["stopReason"] == "end_turn"
    (request,) = agent.received("session/request_permission")
    [child_id] = children(agent.updates(sid))
    assert request["params"]["toolCall"]["toolCallId"] == child_id
    assert (home.workspace / "child.txt").read_text() == "made by a child"
    assert final(children(agent.updates(sid))[child_id])["status"] == "completed"


async def test_session_load_replays_grandchildren(spawn: Any, home: Home) -> None:
    home.config["delegation"] = {"max_spawn_depth": 2}
    home.write_config()
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    leaves = [{"goal": "leaf one [[tokens 2]]"}, {"goal": "leaf two [[tokens 3]]"}]
    orchestrator = tool("delegate_task", goal=tool("delegate_task", tasks=leaves), role="orchestrator")
    result = await agent.prompt(sid, orchestrator)
    assert result["stopReason"] == "end_turn"
    live = children(agent.updates(sid))
    # Live, the grandchildren's calls reach the top-level session too: one child, two below it.
    depths = sorted(events[0]["rawInput"]["depth"] for events in live.values())
    assert depths == [1, 2, 2], live
    grandchildren = {k for k, events in live.items() if events[0]["rawInput"]["depth"] == 2}
    assert {content_text(final(live[k])) for k in grandchildren} == {"t0 t1", "t0 t1 t2"}
    await agent.request("session/close", {"sessionId": sid})

    second = await spawn(initialize={})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    replayed = children(second.updates(sid))
    assert set(replayed) == set(live)
    for key, events in replayed.items():
        assert (
            events[0]["sessionUpdate"] == "tool_call"
            and events[0]["rawInput"]["goal"] == (live[key][0]["rawInput"]["goal"])
        )
        assert final(events)["status"] == "completed"
        assert content_text(final(events)) == content_text(final(live[key]))
    # Each grandchild comes back after the child that started it.
    order = [u["toolCallId"] for u in second.updates(sid) if u.get("sessionUpdate") == "tool_call"]
    [child] = set(live) - grandchildren
    assert all(order.index(child) < order.index(g) for g in grandchildren)


async def test_children_are_not_listed_and_a_running_one_is_not_loadable(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    result = await agent.prompt(
        sid,
        tool("delegate_task", goal="[[tokens 3000]] [[delay 20]] slow", background=True),  # 60 s
    )
    assert result["stopReason"] == "end_turn"
    [child_call] = children(agent.updates(sid))
    child = child_call.removeprefix("subagent-")
    listed = [s["sessionId"] for s in (await agent.request("session/list", {}))["sessions"]]
    assert listed == [sid]
    error = await agent.error(
        "session/load", {"sessionId": child, "cwd": str(home.workspace), "mcpServers": []}
    )
    assert error["code"] == -32602 and error["data"]["reason"] == "subagent", error
    assert f"running subagent of session {sid}" in error["message"]
