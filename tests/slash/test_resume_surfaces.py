"""``/resume`` on every surface that reads commands (docs/slash-commands.md#resume): ``hermes run``,
the TUI gateway and ACP list the saved sessions and find one by id or title; none of them sends
the text to the model."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import run_hermes

from .transports import acp_agent, acp_reply, make_home, start_tui


def _save(home: Path, session_id: str, text: str, title: str) -> None:
    for prompt in (text, f"/title {title}"):
        done = run_hermes(home, "run", "--session", session_id, prompt)
        assert done.returncode == 0, done.stderr


def test_hermes_run_lists_and_names_the_session_to_continue(tmp_path: Path) -> None:
    home, _ = make_home(tmp_path)
    _save(home, "parser-1", "look at the parser", "Parser work")
    listed = run_hermes(home, "run", "/resume")
    assert listed.returncode == 0, listed.stderr
    assert "You said" not in listed.stdout  # not a model turn
    lines = listed.stdout.splitlines()
    assert lines[0] == "Saved sessions, most recent first:"
    assert lines[1].split()[:2] == ["parser-1", "Parser"]
    found = run_hermes(home, "run", "/resume Parser work")
    assert (
        found.stdout
        == 'Session parser-1 (Parser work): continue it with hermes run --session parser-1 "PROMPT".\n'
    )
    missing = run_hermes(home, "run", "/resume nothing-like-it")
    assert (
        missing.returncode == 2 and "no saved session has the id or title 'nothing-like-it'" in missing.stderr
    )
    assert run_hermes(home, "run", "--session", "parser-1", "again").stdout == "You said: again\n"


def test_tui_resumes_by_title_and_binds_the_session(tmp_path: Path) -> None:
    home, workspace = make_home(tmp_path)
    _save(home, "parser-1", "look at the parser", "Parser work")
    tui = start_tui(home)
    try:
        sid = tui.create(cwd=str(workspace))
        listed = tui.call("command.dispatch", session_id=sid, command="/resume")
        assert listed["type"] == "exec" and "parser-1  Parser work" in listed["output"]
        resumed = tui.call("command.dispatch", session_id=sid, command="/resume Parser work")
        assert resumed["type"] == "exec" and resumed["output"] == "Resuming session parser-1 (Parser work)."
        assert resumed["session_id"] == "parser-1" and resumed["resumed"] == "parser-1"
        assert resumed["previous_session_id"] == sid
        assert [m["text"] for m in resumed["messages"]][:2] == [
            "look at the parser",
            "You said: look at the parser",
        ]
        assert tui.turn("parser-1", "go on")["text"] == "You said: go on"
        # Without a session (a host's start screen) it works the same.
        fresh = tui.call("command.dispatch", command="/resume parser-1")
        assert fresh["session_id"] == "parser-1" and "previous_session_id" not in fresh
        unknown = tui.error("command.dispatch", session_id=sid, command="/resume nothing-like-it")
        assert unknown.code == 4004
    finally:
        tui.close()


async def test_acp_lists_and_points_to_the_editor_session_list(tmp_path: Path) -> None:
    home, workspace = make_home(tmp_path)
    _save(home, "parser-1", "look at the parser", "Parser work")
    async with acp_agent(home, workspace) as agent:
        commands = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = commands["sessionId"]
        listed = await acp_reply(agent, sid, "/resume")
        assert "parser-1  Parser work" in listed and "You said" not in listed
        found = await acp_reply(agent, sid, "/resume Parser work")
        assert found.startswith(
            "Session parser-1 (Parser work) is saved; open it from your editor's session list"
        )
        loaded = await agent.request(
            "session/load", {"sessionId": "parser-1", "cwd": str(workspace), "mcpServers": []}
        )
        assert "configOptions" in loaded
