"""What hosts display: ``SessionInfo.branch`` (docs/reference/tui-gateway.md#sessioninfo) and ``verbose:off``
tool-event filtering (docs/reference/tui-gateway.md#event-catalog)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tui.client import TuiProcess


def _git_repo(path: Path, branch: str) -> Path:
    """Create a real git repository at ``path`` with ``branch`` checked out."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True, capture_output=True)
    return path


def _last_info(tui: TuiProcess, sid: str) -> dict[str, object]:
    payload: dict[str, object] = tui.events(sid, "session.info")[-1]["payload"]
    return payload


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_session_info_branch(tui: TuiProcess, tmp_path: Path) -> None:
    """``branch`` is the git branch of the session's cwd (subdirectories too); absent outside a repo."""
    repo = _git_repo(tmp_path / "repo", "feature/tui-branch")
    (repo / "src").mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()

    inside = tui.create(cwd=str(repo / "src"))
    tui.wait_event(inside, "session.info")
    assert _last_info(tui, inside)["branch"] == "feature/tui-branch"
    snap = tui.call("session.activate", session_id=inside)
    assert snap["info"]["branch"] == "feature/tui-branch"

    outside = tui.create(cwd=str(plain))
    tui.wait_event(outside, "session.info")
    assert "branch" not in _last_info(tui, outside)

    # Switching the workspace into the repository re-emits session.info with the branch.
    result = tui.call("config.set", key="cwd", value=str(repo), session_id=outside)
    assert result["branch"] == "feature/tui-branch"
    assert _last_info(tui, outside)["branch"] == "feature/tui-branch"
    assert tui.call("config.get", key="cwd", session_id=outside)["branch"] == "feature/tui-branch"

    # A checkout elsewhere shows up in the next session.info.
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "next"], check=True, capture_output=True)
    tui.call("config.set", key="busy", value="queue", session_id=outside)
    assert _last_info(tui, outside)["branch"] == "next"


def _tool_events(tui: TuiProcess, sid: str, start: int) -> list[tuple[str, str]]:
    return [
        (e["type"], e["payload"]["name"])
        for e in tui.events(sid)[start:]
        if e["type"] in ("tool.start", "tool.progress", "tool.complete")
    ]


def test_verbose_off_filters_tool_events(tui: TuiProcess, tmp_path: Path) -> None:
    """``verbose:off`` hides tool events except inline diffs, todo completions and clarify."""
    work = tmp_path / "work"
    work.mkdir()
    sid = tui.create(cwd=str(work))
    assert tui.call("config.set", key="verbose", value="off", session_id=sid)["value"] == "off"
    assert tui.call("config.get", key="verbose", session_id=sid)["value"] == "off"

    todos = {"todos": [{"id": "1", "content": "ship it", "status": "in_progress"}]}
    script = " ".join(
        [
            '[[tool terminal {"command": "echo quiet"}]]',
            '[[tool write_file {"path": "note.txt", "content": "hello\\n"}]]',
            f"[[tool todo {json.dumps(todos)}]]",
            '[[tool clarify {"question": "which one?"}]]',
        ]
    )
    start = len(tui.events(sid))
    tui.call("prompt.submit", session_id=sid, text=script)
    ask = tui.wait_event(sid, "clarify.request")["payload"]
    assert tui.call("clarify.respond", request_id=ask["request_id"], answer="that one") == {"status": "ok"}
    done = tui.wait_complete(sid)
    assert done["status"] == "complete"
    assert (work / "note.txt").read_text() == "hello\n"

    seen = _tool_events(tui, sid, start)
    names = {name for _type, name in seen}
    assert "terminal" not in names
    assert ("tool.start", "write_file") not in seen and ("tool.start", "todo") not in seen
    completes = {e["payload"]["name"]: e["payload"] for e in tui.events(sid, "tool.complete")}
    assert "inline_diff" in completes["write_file"] and "+hello" in completes["write_file"]["inline_diff"]
    assert completes["todo"]["todos"][0]["content"] == "ship it"
    assert ("tool.start", "clarify") in seen and ("tool.complete", "clarify") in seen

    # Back to "all": the same plain tool is visible again.
    tui.call("config.set", key="verbose", value="all", session_id=sid)
    start = len(tui.events(sid))
    tui.turn(sid, '[[tool terminal {"command": "echo loud"}]]')
    assert ("tool.start", "terminal") in _tool_events(tui, sid, start)
    assert ("tool.complete", "terminal") in _tool_events(tui, sid, start)


def test_verbose_global_default_and_session_persistence(spawn: Callable[..., TuiProcess], home: Path) -> None:
    """Global ``verbose`` is new sessions' default; a session's choice survives resume."""
    tui = spawn()
    assert tui.call("config.get", key="verbose")["value"] == "all"
    assert tui.call("config.set", key="verbose", value="off")["value"] == "off"
    assert tui.call("config.get", key="verbose")["value"] == "off"
    assert "verbose" in (home / "config.toml").read_text()
    quiet = tui.create()
    assert tui.call("config.get", key="verbose", session_id=quiet)["value"] == "off"
    start = len(tui.events(quiet))
    tui.turn(quiet, '[[tool terminal {"command": "echo hidden"}]]')
    assert _tool_events(tui, quiet, start) == []

    # A new process reads the default from config.toml; a session-scoped choice is stored on it.
    tui.close()
    again = spawn()
    sid = again.create()
    assert again.call("config.get", key="verbose", session_id=sid)["value"] == "off"
    assert again.call("config.set", key="verbose", value="cycle", session_id=sid)["value"] == "new"
    assert again.call("config.get", key="verbose")["value"] == "off"
    again.turn(sid, "persist me")
    assert again.call("session.close", session_id=sid) == {"closed": True}
    again.call("session.resume", session_id=sid)
    assert again.call("config.get", key="verbose", session_id=sid)["value"] == "new"


def test_inline_diff_headers_are_workspace_relative(tui: TuiProcess, tmp_path: Path) -> None:
    """``inline_diff`` reads like ``git diff``: ``a/src/x.txt``, never ``a//abs/path``."""
    work = tmp_path / "diffs"
    (work / "src").mkdir(parents=True)
    sid = tui.create(cwd=str(work))
    tui.turn(sid, '[[tool write_file {"path": "src/x.txt", "content": "one\\ntwo"}]]')
    tui.turn(sid, '[[tool edit_file {"path": "src/x.txt", "old_string": "two", "new_string": "three"}]]')
    created, edited = [e["payload"]["inline_diff"] for e in tui.events(sid, "tool.complete")]
    assert created.splitlines()[:2] == ["--- /dev/null", "+++ b/src/x.txt"]
    assert edited.splitlines()[:2] == ["--- a/src/x.txt", "+++ b/src/x.txt"]
    assert "//" not in edited
    # The last line has no newline: the diff says so instead of gluing two lines together.
    assert edited.endswith("-two\n\\ No newline at end of file\n+three\n\\ No newline at end of file\n")
