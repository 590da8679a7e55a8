"""Unit tests of the tool-call and permission mappings
(docs/reference/acp.md#kind-title-and-locations, #tool-call-content, #permission-options)."""

from __future__ import annotations

from typing import Any

from hermes_acp import toolcalls
from hermes_acp.permissions import offered_options
from hermes_core import FileChange, QuestionRequested


def test_kinds_titles_and_locations() -> None:
    assert toolcalls.tool_kind("read_file", "other") == "read"
    assert toolcalls.tool_kind("plugin_tool", "fetch") == "fetch"
    assert toolcalls.tool_kind("plugin_tool", "switch_mode") == "other"
    assert toolcalls.tool_kind("plugin_tool", None) == "other"
    assert toolcalls.tool_title("terminal", None, {"command": "x" * 100 + "\nsecond"}) == "Run: " + "x" * 80
    assert toolcalls.tool_title("todo", "whatever", {}) == "Update plan"
    assert toolcalls.tool_title("plugin_tool", "", {}) == "plugin_tool"
    change = FileChange("/w/a.txt", "a\nb\nc\n", "a\nB\nc\n")
    assert toolcalls.locations("edit_file", ("/w/x/../a.txt",), change) == [{"path": "/w/a.txt", "line": 2}]
    assert toolcalls.locations("terminal", ("/w",), None) == []
    assert toolcalls.locations("read_file", ("relative.txt",), None) == []


def test_diff_content_whole_file_and_large_fallback() -> None:
    small = toolcalls.diff_content(FileChange("/w/a.txt", None, "new\n"))
    assert small == {"type": "diff", "path": "/w/a.txt", "oldText": None, "newText": "new\n"}
    big = "line\n" * 300_000
    large = toolcalls.diff_content(FileChange("/w/b.txt", big, big + "tail\n"))
    assert large["type"] == "content" and "+tail" in large["content"]["text"]


def test_terminal_content_and_exit_codes() -> None:
    content = toolcalls.final_content("terminal", {"command": "false"}, "(no output)\n[exit code 1]", None)
    assert content[0]["content"]["text"] == "$ false\n(no output)\n[exit 1]"
    assert toolcalls.terminal_exited("out\n[exit code 1]\n")
    assert not toolcalls.terminal_exited("out\n[timed out after 5 s; the command was killed]")


def _question(**fields: Any) -> QuestionRequested:
    return QuestionRequested(
        session_id="s", request_id="q", kind="approval", timeout_s=1.0, deadline_monotonic=0.0, **fields
    )


def test_permission_options_follow_the_core() -> None:
    ids = [
        o["optionId"]
        for o in offered_options(
            _question(choices=("once", "session", "always", "deny"), allow_session=True, persistable=True)
        )
    ]
    assert ids == ["allow_once", "allow_session", "allow_always", "reject_once"]
    ids = [o["optionId"] for o in offered_options(_question(choices=("once", "deny")))]
    assert ids == ["allow_once", "reject_once"]
    ids = [
        o["optionId"]
        for o in offered_options(_question(choices=("once", "session", "deny"), allow_session=True))
    ]
    assert ids == ["allow_once", "allow_session", "reject_once"]


def test_search_locations_are_absolute_and_capped() -> None:
    result = "\n".join([f"src/f{i}.py:{i + 1}: hit" for i in range(30)] + ["30 matching lines in 30 files"])
    found = toolcalls.search_locations(result, "/w")
    assert len(found) == 20
    assert found[0] == {"path": "/w/src/f0.py", "line": 1}
    assert toolcalls.search_locations("/abs/x.py:3: y\n/abs/x.py:4: z", "/w") == [
        {"path": "/abs/x.py", "line": 3}
    ]
