"""Checklist group E (tool calls, docs/reference/acp.md#tool-calls) and I #39–#40 (client file system)."""

from __future__ import annotations

from typing import Any

from tests.acp.client import RecordingClient
from tests.acp.conftest import Home
from tests.acp.helpers import calls, content_text, final, of_kind, tool

KINDS = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "list_dir": "search",
    "search": "search",
    "terminal": "execute",
    "todo": "think",
}


def _args(name: str) -> dict[str, Any]:
    table: dict[str, dict[str, Any]] = {
        "read_file": {"path": "a.txt"},
        "write_file": {"path": "new.txt", "content": "n\n"},
        "edit_file": {"path": "a.txt", "old_string": "one", "new_string": "uno"},
        "list_dir": {"path": "."},
        "search": {"pattern": "two"},
        "terminal": {"command": "echo hi"},
        "todo": {"todos": [{"id": "1", "content": "step", "status": "pending"}]},
    }
    return table[name]


async def test_every_builtin_tool_is_announced_and_closed(spawn: Any, home: Home) -> None:
    """#25/#26: id, title, kind, pending, rawInput, absolute locations, in_progress, one final."""
    (home.workspace / "a.txt").write_text("one\ntwo\n")
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    seen: set[str] = set()
    for name in sorted(KINDS):
        result = await agent.prompt(sid, tool(name, **_args(name)))
        assert result["stopReason"] == "end_turn", name
        grouped = calls(agent.updates(sid))
        (new_id,) = set(grouped) - seen
        seen.add(new_id)
        events = grouped[new_id]
        announced = events[0]
        assert announced["sessionUpdate"] == "tool_call"
        assert announced["kind"] == KINDS[name], name
        assert announced["title"]
        assert announced["status"] == "pending"
        assert isinstance(announced["rawInput"], dict)
        for location in announced["locations"]:
            assert location["path"].startswith(str(home.workspace.resolve()))
        statuses = [u.get("status") for u in events[1:] if u.get("status")]
        assert statuses == ["in_progress", "completed"], (name, events)
        if name == "search":
            assert final(events)["locations"] == [
                {"path": str(home.workspace.resolve() / "a.txt"), "line": 2}
            ]
    plan = of_kind(agent.updates(sid), "plan")
    assert plan and plan[-1]["entries"] == [{"content": "step", "priority": "medium", "status": "pending"}]


async def test_edit_diff_new_file_terminal_output_and_failure(spawn: Any, home: Home) -> None:
    """#27: diff with full texts; new file oldText null; terminal `$ cmd`+`[exit N]`; failing tool."""
    (home.workspace / "a.txt").write_text("one\ntwo\n")
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    text = " ".join(
        [
            tool("edit_file", path="a.txt", old_string="one", new_string="uno"),
            tool("write_file", path="b.txt", content="bee\n"),
            tool("terminal", command="echo out; exit 3"),
            tool("read_file", path="missing.txt"),
        ]
    )
    assert (await agent.prompt(sid, text))["stopReason"] == "end_turn"
    grouped = list(calls(agent.updates(sid)).values())
    edit, write, term, read = (final(events) for events in grouped)
    diff = edit["content"][0]
    assert diff == {
        "type": "diff",
        "path": str(home.workspace.resolve() / "a.txt"),
        "oldText": "one\ntwo\n",
        "newText": "uno\ntwo\n",
    }
    assert write["content"][0]["type"] == "diff" and write["content"][0].get("oldText") is None
    assert write["content"][0]["newText"] == "bee\n"
    assert term["status"] == "completed"
    body = content_text(term)
    assert body.startswith("$ echo out; exit 3\n") and "out" in body and "[exit 3]" in body
    assert read["status"] == "failed" and content_text(read)
    assert (home.workspace / "a.txt").read_text() == "uno\ntwo\n"


async def test_relative_write_lands_in_the_session_cwd(spawn: Any, home: Home, tmp_path: Any) -> None:
    """#13: agent started in dir A, session in B: a relative write lands in B."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    agent = await spawn(initialize={}, cwd=other)
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.prompt(sid, tool("write_file", path="rel.txt", content="x"))
    assert (home.workspace / "rel.txt").read_text() == "x"
    assert not (other / "rel.txt").exists()
    (events,) = calls(agent.updates(sid)).values()
    assert [loc["path"] for loc in events[0]["locations"]] == [str(home.workspace.resolve() / "rel.txt")]


async def test_client_fs_reads_buffers_and_writes_through_the_client(spawn: Any, home: Home) -> None:
    """#39: with fs advertised, read_file sees the buffer; edit_file writes via the client only."""
    path = home.workspace / "a.txt"
    path.write_text("disk text\n")
    client = RecordingClient()
    client.buffers[str(path.resolve())] = "buffer text\n"
    agent = await spawn(client=client, initialize={"fs": {"readTextFile": True, "writeTextFile": True}})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.prompt(sid, tool("read_file", path="a.txt"))
    assert "buffer text" in agent.text(sid)
    await agent.prompt(sid, tool("edit_file", path="a.txt", old_string="buffer", new_string="edited"))
    assert client.writes == [(str(path.resolve()), "edited text\n")]
    assert path.read_text() == "disk text\n"
    assert agent.received("fs/read_text_file") and agent.received("fs/write_text_file")
    client.fs_error = "no such buffer"
    result = await agent.prompt(sid, tool("write_file", path="c.txt", content="c"))
    assert result["stopReason"] == "end_turn"
    last = list(calls(agent.updates(sid)).values())[-1]
    assert final(last)["status"] == "failed"


async def test_without_fs_files_change_on_disk_and_no_client_calls(spawn: Any, home: Home) -> None:
    """#40: no fs advertised: no fs/* requests; with terminal true: never terminal/*."""
    agent = await spawn(initialize={"terminal": True})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.prompt(
        sid, tool("write_file", path="d.txt", content="d") + " " + tool("terminal", command="echo t")
    )
    assert (home.workspace / "d.txt").read_text() == "d"
    methods = {m.get("method") for d, m in agent.frames if d == "in"}
    assert not any(str(m).startswith(("fs/", "terminal/")) for m in methods)
