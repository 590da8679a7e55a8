"""Checklist group C (sessions): new, load, resume, list, close, fork (docs/reference/acp.md#sessions)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.acp.conftest import Home
from tests.timing import eventually


async def test_new_session_twice_gives_distinct_ids_and_full_options(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    first = await agent.new(home.workspace)
    second = await agent.new(home.workspace)
    assert first["sessionId"] != second["sessionId"]
    assert first["modes"]["currentModeId"] == "default"
    assert [m["id"] for m in first["modes"]["availableModes"]] == [
        "default",
        "accept_edits",
        "ask_everything",
    ]
    mode, model = first["configOptions"]
    assert (mode["id"], mode["category"], mode["currentValue"]) == ("mode", "mode", "default")
    assert (model["id"], model["category"], model["currentValue"]) == ("model", "model", "mock:script")
    assert model["currentValue"] in [o["value"] for o in model["options"]]
    assert first["models"]["currentModelId"] == "mock:script"
    assert [m["modelId"] for m in first["models"]["availableModels"]] == [
        o["value"] for o in model["options"]
    ]


async def test_prompt_echoes(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    result = await agent.prompt(sid, "hello there")
    assert result == {"stopReason": "end_turn"}
    assert agent.text(sid) == "You said: hello there"


async def test_new_session_params(spawn: Any, home: Home, tmp_path: Path) -> None:
    """#10: relative/nonexistent cwd, missing mcpServers, extra dirs → -32602; stdio MCP accepted."""
    agent = await spawn(initialize={})
    bad = [
        {"cwd": "relative/dir", "mcpServers": []},
        {"cwd": str(tmp_path / "missing"), "mcpServers": []},
        {"cwd": str(home.workspace)},
        {"cwd": str(home.workspace), "mcpServers": [], "additionalDirectories": [str(tmp_path)]},
        {"cwd": str(home.workspace), "mcpServers": "nope"},
    ]
    for params in bad:
        assert (await agent.error("session/new", params))["code"] == -32602, params
    stdio = {"name": "files", "command": "/bin/true", "args": [], "env": []}
    result = await agent.new(home.workspace, mcpServers=[stdio], additionalDirectories=[])
    assert result["sessionId"]
    # /bin/true is no MCP server: it is started for the session and its failure is logged.
    await eventually(lambda: "MCP server files" in agent.stderr(), timeout=30, what="the server's failure")


def _before_response(agent: Any, method: str, sid: str) -> list[dict[str, Any]]:
    """Return the updates for ``sid`` received before the response to the last ``method``."""
    request_id = [m["id"] for d, m in agent.frames if d == "out" and m.get("method") == method][-1]
    seen: list[dict[str, Any]] = []
    for direction, msg in agent.frames:
        if direction == "in" and "method" not in msg and msg.get("id") == request_id:
            return seen
        if direction == "in" and msg.get("method") == "session/update" and msg["params"]["sessionId"] == sid:
            seen.append(msg["params"]["update"])
    raise AssertionError("no response")


async def test_ordering_for_new_resume_fork(spawn: Any, home: Home) -> None:
    """#12: no update for the id precedes the response; available_commands_update follows it."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(sid, "remember the word kiwi")
    await agent.request("session/resume", {"sessionId": sid, "cwd": str(home.workspace)})
    forked = await agent.request("session/fork", {"sessionId": sid, "cwd": str(home.workspace)})
    await agent.settle()
    fid = forked["sessionId"]
    assert _before_response(agent, "session/fork", fid) == []
    updates = agent.updates(fid)
    assert updates[0]["sessionUpdate"] == "available_commands_update"
    resume_id = [m["id"] for d, m in agent.frames if d == "out" and m.get("method") == "session/resume"][-1]
    index = next(
        i
        for i, (d, m) in enumerate(agent.frames)
        if d == "in" and m.get("id") == resume_id and "method" not in m
    )
    after = [m for d, m in agent.frames[index + 1 :] if d == "in" and m.get("method") == "session/update"]
    assert after and after[0]["params"]["update"]["sessionUpdate"] == "available_commands_update"


async def test_load_replays_then_answers(spawn: Any, home: Home) -> None:
    """#14: load replays user/thought/message/tool/plan before the response; history is kept."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    todo = '[[tool todo {"todos": [{"id": "1", "content": "plan it", "status": "pending"}]}]]'
    await agent.prompt(sid, f"[[reason pondering]] first {todo}")
    second = await spawn(initialize={})
    error = await second.error(
        "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
    )
    assert error["code"] == -32602 and error["data"]["reason"] == "in_use"
    await agent.request("session/close", {"sessionId": sid})
    agent_frames_before = len(second.frames)
    result = await second.request(
        "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
    )
    assert result["modes"]["currentModeId"] == "accept_edits"
    replayed = [u["sessionUpdate"] for u in _before_response(second, "session/load", sid)]
    for kind in (
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    ):
        assert kind in replayed, kind
    assert "available_commands_update" not in replayed
    await second.settle()
    assert agent_frames_before < len(second.frames)
    after = [u["sessionUpdate"] for u in second.updates(sid)][len(replayed) :]
    assert after[0] == "available_commands_update" and set(after) <= {
        "available_commands_update",
        "usage_update",
    }
    await second.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "mock:history"}
    )
    await second.prompt(sid, "next")
    assert "first" in second.text(sid)
    error = await second.error(
        "session/load", {"sessionId": "20200101_000000_abcdef", "cwd": str(home.workspace), "mcpServers": []}
    )
    assert error["code"] == -32002


async def test_resume_keeps_history_without_replay(spawn: Any, home: Home) -> None:
    """#15: zero updates before the resume response; history, model and mode kept."""
    first = await spawn(initialize={})
    sid = (await first.new(home.workspace))["sessionId"]
    await first.request("session/set_mode", {"sessionId": sid, "modeId": "ask_everything"})
    await first.request("session/set_model", {"sessionId": sid, "modelId": "mock:history"})
    await first.prompt(sid, "alpha")
    await first.request("session/close", {"sessionId": sid})
    second = await spawn(initialize={})
    result = await second.request("session/resume", {"sessionId": sid, "cwd": str(home.workspace)})
    assert _before_response(second, "session/resume", sid) == []
    assert result["modes"]["currentModeId"] == "ask_everything"
    assert result["models"]["currentModelId"] == "mock:history"
    await second.prompt(sid, "beta")
    assert "alpha" in second.text(sid) and "beta" in second.text(sid)
    error = await second.error(
        "session/resume", {"sessionId": "20200101_000000_abcdef", "cwd": str(home.workspace)}
    )
    assert error["code"] == -32002


async def test_list_pages_and_filters(spawn: Any, home: Home, tmp_path: Path) -> None:
    """#16: empty list; cwd filter; absolute cwd, title, ISO updatedAt; pages of 2 chain."""
    home.config["acp"] = {"list_page_size": 2}
    home.write_config()
    other = tmp_path / "other"
    other.mkdir()
    agent = await spawn(initialize={})
    assert (await agent.request("session/list", {})) == {"sessions": []}
    ids = []
    for index in range(3):
        sid = (await agent.new(home.workspace))["sessionId"]
        await agent.prompt(sid, f"session number {index}")
        ids.append(sid)
    elsewhere = (await agent.new(other))["sessionId"]
    await agent.prompt(elsewhere, "elsewhere")
    page = await agent.request("session/list", {"cwd": str(home.workspace)})
    assert len(page["sessions"]) == 2 and "nextCursor" in page
    entry = page["sessions"][0]
    assert entry["cwd"] == str(home.workspace.resolve()) and entry["title"].startswith("session number")
    assert entry["updatedAt"].endswith("Z") and "T" in entry["updatedAt"]
    rest = await agent.request("session/list", {"cwd": str(home.workspace), "cursor": page["nextCursor"]})
    assert "nextCursor" not in rest
    listed = [s["sessionId"] for s in page["sessions"] + rest["sessions"]]
    assert sorted(listed) == sorted(ids)
    only_other = await agent.request("session/list", {"cwd": str(other)})
    assert [s["sessionId"] for s in only_other["sessions"]] == [elsewhere]
    assert (await agent.error("session/list", {"cursor": "garbage!!"}))["code"] == -32602
    assert (await agent.error("session/list", {"cwd": "relative"}))["code"] == -32602


async def test_fork(spawn: Any, home: Home) -> None:
    """#18: fork copies mode, model and history; the source replays unchanged; unknown → -32002."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.request("session/set_model", {"sessionId": sid, "modelId": "mock:history"})
    await agent.prompt(sid, "original words")
    forked = await agent.request(
        "session/fork", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
    )
    fid = forked["sessionId"]
    assert fid != sid
    assert forked["modes"]["currentModeId"] == "accept_edits"
    assert forked["models"]["currentModelId"] == "mock:history"
    await agent.prompt(fid, "fork only")
    assert "original words" in agent.text(fid)
    second = await spawn(initialize={})
    await agent.request("session/close", {"sessionId": sid})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    assert "fork only" not in second.text(sid, ("user_message_chunk", "agent_message_chunk"))
    error = await agent.error(
        "session/fork", {"sessionId": "20200101_000000_abcdef", "cwd": str(home.workspace)}
    )
    assert error["code"] == -32002


async def test_load_after_the_agent_was_killed_works_at_once(spawn: Any, home: Home) -> None:
    """An editor restarting a ``kill -9``-ed agent reopens its session without waiting for the lease."""
    import signal
    import time

    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(sid, "before the crash")
    agent.process.send_signal(signal.SIGKILL)
    await asyncio.wait_for(agent.process.wait(), 10)
    second = await spawn(initialize={})
    started = time.monotonic()
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    assert time.monotonic() - started < 5  # the lease would only expire after 30 s
    await second.prompt(sid, "after")
    assert second.text(sid).endswith("You said: after")
