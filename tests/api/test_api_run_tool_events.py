"""Run events show a tool's output as it comes (``tool.progress``) and its file change as a
unified diff (docs/reference/api-server.md#run-events)."""

from __future__ import annotations

import json

from tests.api.api_helpers import Server
from tests.api.test_api_runs import events, start_run


def _tool(name: str, args: dict[str, str]) -> str:
    return f"[[tool {name} {json.dumps(args)}]]"


async def test_tool_output_arrives_as_progress_events_between_start_and_end(server: Server) -> None:
    run = await start_run(server, {"input": _tool("terminal", {"command": "echo one; echo two"}) + " go"})
    frames = [f["data"] for f in await events(server, run["run_id"])]
    names = [f["event"] for f in frames]
    progress = [f for f in frames if f["event"] == "tool.progress"]
    assert progress, names
    assert names.index("tool.started") < names.index("tool.progress") < names.index("tool.completed")
    started = next(f for f in frames if f["event"] == "tool.started")
    assert {p["tool_call_id"] for p in progress} == {started["tool_call_id"]}
    assert "".join(p["chunk"] for p in progress) == "one\ntwo\n"
    assert "diff" not in started


async def test_file_changes_come_with_a_unified_diff(server: Server) -> None:
    write = _tool("write_file", {"path": "notes.txt", "content": "alpha\nbeta\n"})
    run = await start_run(server, {"input": write + " go"})
    frames = [f["data"] for f in await events(server, run["run_id"])]
    completed = next(f for f in frames if f["event"] == "tool.completed")
    assert completed["error"] is False
    assert completed["diff"].splitlines() == [
        "--- /dev/null",
        "+++ b/notes.txt",
        "@@ -0,0 +1,2 @@",
        "+alpha",
        "+beta",
    ]
    edit = _tool("edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"})
    again = await start_run(server, {"input": edit + " go", "session_id": run["session_id"]})
    frames = [f["data"] for f in await events(server, again["run_id"])]
    completed = next(f for f in frames if f["event"] == "tool.completed")
    lines = completed["diff"].splitlines()
    assert lines[:2] == ["--- a/notes.txt", "+++ b/notes.txt"]
    assert "-beta" in lines and "+gamma" in lines and " alpha" in lines
