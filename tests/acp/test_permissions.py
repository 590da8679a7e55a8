"""Checklist group F (permissions, docs/reference/acp.md#permissions)."""

from __future__ import annotations

from typing import Any

from tests.acp.client import RecordingClient
from tests.acp.conftest import Home
from tests.acp.helpers import calls, content_text, final, tool
from tests.timing import eventually

OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_session", "name": "Allow for this session", "kind": "allow_always"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
]


async def _session(spawn: Any, home: Home, client: RecordingClient | None = None) -> tuple[Any, str]:
    agent = await spawn(client=client or RecordingClient(), initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    return agent, sid


async def test_edit_asks_with_the_announced_id_and_four_options(spawn: Any, home: Home) -> None:
    """#28: default mode asks for an edit; allow_once applies it and the next edit asks again."""
    (home.workspace / "a.txt").write_text("one\n")
    client = RecordingClient()
    client.permission_answers = ["allow_once", "allow_once"]
    agent, sid = await _session(spawn, home, client)
    edit = tool("edit_file", path="a.txt", old_string="one", new_string="two")
    assert (await agent.prompt(sid, edit))["stopReason"] == "end_turn"
    (request,) = agent.received("session/request_permission")
    (events,) = calls(agent.updates(sid)).values()
    params = request["params"]
    assert params["toolCall"]["toolCallId"] == events[0]["toolCallId"]
    assert params["toolCall"]["kind"] == "edit"
    assert params["toolCall"]["content"][0]["type"] == "diff"
    assert params["options"] == OPTIONS
    assert final(events)["status"] == "completed"
    assert (home.workspace / "a.txt").read_text() == "two\n"
    await agent.prompt(sid, tool("edit_file", path="a.txt", old_string="two", new_string="three"))
    assert len(agent.received("session/request_permission")) == 2


async def test_rejections_leave_the_file_and_fail_the_call(spawn: Any, home: Home) -> None:
    """#29: reject_once, an unknown optionId and `cancelled` all deny; the turn ends end_turn."""
    target = home.workspace / "a.txt"
    target.write_text("one\n")
    client = RecordingClient()
    client.permission_answers = ["reject_once", "bogus_option", "cancelled"]
    agent, sid = await _session(spawn, home, client)
    for _ in range(3):
        result = await agent.prompt(sid, tool("write_file", path="a.txt", content="changed\n"))
        assert result["stopReason"] == "end_turn"
        assert target.read_text() == "one\n"
        events = list(calls(agent.updates(sid)).values())[-1]
        assert final(events)["status"] == "failed"
        assert all(u.get("status") != "in_progress" for u in events)
    assert "bogus_option" in agent.stderr()


async def test_denial_cannot_be_bypassed_with_the_terminal(spawn: Any, home: Home) -> None:
    """#29: after write_file(X) is rejected, a terminal command writing X fails unasked."""
    target = home.workspace / "x.txt"
    target.write_text("orig\n")
    client = RecordingClient()
    client.permission_answers = ["reject_once"]
    agent, sid = await _session(spawn, home, client)
    text = (
        tool("write_file", path="x.txt", content="new\n")
        + " "
        + tool("terminal", command=f"echo hacked > {target}")
    )
    assert (await agent.prompt(sid, text))["stopReason"] == "end_turn"
    assert target.read_text() == "orig\n"
    assert len(agent.received("session/request_permission")) == 1
    finals = [final(events)["status"] for events in calls(agent.updates(sid)).values()]
    assert finals == ["failed", "failed"]


async def test_allow_session_and_allow_always(spawn: Any, home: Home) -> None:
    """#30: allow_session sticks for the session only; allow_always survives a new process."""
    client = RecordingClient()
    client.permission_answers = ["allow_session", "allow_always"]
    agent, sid = await _session(spawn, home, client)
    await agent.prompt(sid, tool("write_file", path="s.txt", content="1"))
    await agent.prompt(sid, tool("write_file", path="s.txt", content="2"))
    assert len(agent.received("session/request_permission")) == 1
    other = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(other, tool("write_file", path="s.txt", content="3"))
    assert len(agent.received("session/request_permission")) == 2
    second = await spawn(initialize={})
    sid2 = (await second.new(home.workspace))["sessionId"]
    await second.prompt(sid2, tool("write_file", path="s.txt", content="4"))
    assert second.received("session/request_permission") == []
    assert (home.workspace / "s.txt").read_text() == "4"


async def test_sensitive_target_offers_no_session_or_always(spawn: Any, home: Home) -> None:
    """#30: a `.env` target is offered neither allow_session nor allow_always."""
    client = RecordingClient()
    client.permission_answers = ["reject_once"]
    agent, sid = await _session(spawn, home, client)
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.prompt(sid, tool("write_file", path=".env", content="A=1"))
    (request,) = agent.received("session/request_permission")
    assert [o["optionId"] for o in request["params"]["options"]] == ["allow_once", "reject_once"]


async def test_modes_decide_what_asks(spawn: Any, home: Home) -> None:
    """#31: accept_edits edits unasked; ask_everything asks for ls; read never asks; guard always asks."""
    (home.workspace / "r.txt").write_text("r\n")
    client = RecordingClient()
    client.permission_answers = ["allow_once"] * 5
    agent, sid = await _session(spawn, home, client)
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.prompt(sid, tool("write_file", path="e.txt", content="e"))
    assert agent.received("session/request_permission") == []
    await agent.prompt(sid, tool("terminal", command="echo hermes-guard-test"))
    assert len(agent.received("session/request_permission")) == 1
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "ask_everything"})
    await agent.prompt(sid, tool("read_file", path="r.txt"))
    assert len(agent.received("session/request_permission")) == 1
    await agent.prompt(sid, tool("terminal", command="ls"))
    assert len(agent.received("session/request_permission")) == 2


async def test_expired_permission_is_withdrawn(spawn: Any, home: Home) -> None:
    """#31: when the approval deadline passes the agent sends $/cancel_request for it."""
    home.config["approvals"] = {"timeout_s": 0.3}
    home.write_config()
    client = RecordingClient()
    client.permission_delay = 1.0
    client.permission_answers = ["allow_once"]
    agent, sid = await _session(spawn, home, client)
    result = await agent.prompt(sid, tool("write_file", path="late.txt", content="x"))
    assert result["stopReason"] == "end_turn"
    (request,) = agent.received("session/request_permission")
    withdrawn = agent.received("$/cancel_request")
    assert withdrawn and withdrawn[0]["params"] == {"requestId": request["id"]}
    assert not (home.workspace / "late.txt").exists()
    # The client answers after its delay; a round trip after that answer shows it was ignored.
    answered = lambda: any(  # noqa: E731
        d == "out" and "method" not in m and m.get("id") == request["id"] for d, m in agent.frames
    )
    await eventually(answered, what="the late permission answer")
    await agent.request("session/list", {})
    assert not (home.workspace / "late.txt").exists()
    events = list(calls(agent.updates(sid)).values())[-1]
    assert final(events)["status"] == "failed" and content_text(final(events))


async def test_permission_diff_comes_from_the_editor_buffer(spawn: Any, home: Home) -> None:
    """With client fs, the diff the user approves is computed from the unsaved buffer the edit changes."""
    path = home.workspace / "a.txt"
    path.write_text("disk: alpha\n")
    client = RecordingClient()
    client.buffers[str(path.resolve())] = "buffer: alpha\nunsaved line\n"
    agent = await spawn(client=client, initialize={"fs": {"readTextFile": True, "writeTextFile": True}})
    sid = (await agent.new(home.workspace))["sessionId"]
    edit = tool("edit_file", path="a.txt", old_string="alpha", new_string="beta")
    assert (await agent.prompt(sid, edit))["stopReason"] == "end_turn"
    (request,) = agent.received("session/request_permission")
    (diff,) = request["params"]["toolCall"]["content"]
    assert diff["type"] == "diff"
    assert diff["oldText"] == "buffer: alpha\nunsaved line\n"
    assert diff["newText"] == "buffer: beta\nunsaved line\n"
    # What was approved is exactly what was written, and the disk was left alone.
    assert client.writes == [(str(path.resolve()), diff["newText"])]
    assert path.read_text() == "disk: alpha\n"
    (events,) = calls(agent.updates(sid)).values()
    assert events[0]["content"][0]["oldText"] == diff["oldText"]  # the announced call agrees
