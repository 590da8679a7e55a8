"""MCP tools through the real surfaces: ``hermes run /reload-mcp`` and the TUI gateway."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.mcp.helpers import TINY
from tests.tui.client import HERMES, TuiProcess, hermes_env, write_config


def server_toml(name: str = "tiny", extra: str = "") -> str:
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(TINY)}]\n"
        f"connect_timeout_s = 60\n{extra}"
    )


def test_cli_reload_mcp_reports_each_server(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        'model = "mock:echo"\n'
        + server_toml()
        + server_toml("gone", "").replace(
            json.dumps(sys.executable), json.dumps(str(tmp_path / "no-such-binary")), 1
        ),
    )
    result = subprocess.run(
        [HERMES, "run", "/reload-mcp"],
        env=hermes_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Reloaded 2 MCP servers:"
    assert "  tiny (stdio): ready, 12 tools" in lines
    gone = [line for line in lines if line.startswith("  gone (stdio): ")]
    assert gone and "command not found" in gone[0] and "0 tools" in gone[0]


def test_tui_reload_mcp_and_an_approved_call(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n' + server_toml())
    tui = TuiProcess(home, cwd=home)
    try:
        tui.wait_event("", "gateway.ready", timeout=20)
        sid = tui.create()
        answer = tui.call("reload.mcp", session_id=sid, confirm=True, timeout=120)
        assert answer["status"] == "reloaded"
        assert [(s["name"], s["state"], s["tools"], s["transport"]) for s in answer["servers"]] == [
            ("tiny", "ready", 12, "stdio")
        ]
        info = tui.wait_event(sid, "session.info", where=lambda e: "mcp" in e["payload"].get("tools", {}))
        assert "mcp_tiny_write_note" in info["payload"]["tools"]["mcp"]

        tui.call("prompt.submit", session_id=sid, text='[[tool mcp_tiny_write_note {"text": "hey"}]]')
        ask = tui.wait_event(sid, "approval.request", timeout=30)["payload"]
        assert tui.call("approval.respond", session_id=sid, request_id=ask["request_id"], choice="once")
        done = tui.wait_event(sid, "tool.complete", timeout=30)["payload"]
        assert done["name"] == "mcp_tiny_write_note" and done["result"] == "wrote 3 characters"
        tui.wait_complete(sid, timeout=30)

        # The config changes: reload picks up the new set.
        write_config(home, 'model = "mock:echo"\n' + server_toml("other", 'include = ["echo"]\n'))
        answer = tui.call("reload.mcp", session_id=sid, confirm=True, timeout=120)
        assert [(s["name"], s["state"], s["tools"]) for s in answer["servers"]] == [("other", "ready", 1)]
        tui.wait_idle(sid)
        done = tui.turn(sid, '[[tool mcp_other_echo {"text": "new"}]]', timeout=60)
        assert done["status"] == "complete"
        result = tui.wait_event(sid, "tool.complete", count=2)["payload"]
        assert result["result"] == "echo: new"
    finally:
        tui.close()


def test_plugins_and_acp_check_show_the_configured_servers(tmp_path: Path) -> None:
    missing = json.dumps(str(tmp_path / "no-such-binary"))
    write_config(
        tmp_path, 'model = "mock:echo"\n' + server_toml() + f"[mcp_servers.bad]\ncommand = {missing}\n"
    )

    def hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HERMES, *args],
            env=hermes_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    listed = hermes("plugins")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split(None, 5) for line in listed.stdout.split("SERVER", 1)[1].splitlines()[1:]]
    assert ["tiny", "mcp", "stdio", "ready", "12", "-"] in rows
    (bad,) = [r for r in rows if r[0] == "bad"]
    assert (
        bad[3] in ("restarting", "circuit_open")
        and bad[5] == f"command not found: {tmp_path / 'no-such-binary'}"
    )

    check = hermes("acp", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok   mcp tiny: stdio, 12 tools" in check.stdout.splitlines()
    assert any(
        line.startswith("warn mcp bad: stdio, ") and "command not found" in line
        for line in check.stdout.splitlines()
    )


def test_cli_reports_a_tool_lost_to_a_name_clash(tmp_path: Path) -> None:
    # "a.b" and "a_b" both give mcp_a_b_echo; "a.b" is listed first and keeps it.
    write_config(
        tmp_path,
        'model = "mock:echo"\n'
        + server_toml('"a.b"', 'include = ["echo"]\n')
        + server_toml("a_b", 'include = ["echo", "add"]\n'),
    )

    def hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HERMES, *args],
            env=hermes_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    reloaded = hermes("run", "/reload-mcp")
    assert reloaded.returncode == 0, reloaded.stderr
    lines = reloaded.stdout.splitlines()
    assert "  a.b (stdio): ready, 1 tool" in lines
    at = lines.index("  a_b (stdio): ready, 1 tool")
    assert lines[at + 1] == "    left out (name taken): mcp_a_b_echo"

    listed = hermes("plugins")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split(None, 5) for line in listed.stdout.split("SERVER", 1)[1].splitlines()[1:]]
    assert ["a.b", "mcp", "stdio", "ready", "1", "-"] in rows
    assert ["a_b", "mcp", "stdio", "ready", "1", "left out (name taken): mcp_a_b_echo"] in rows

    check = hermes("acp", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "warn mcp a_b: stdio, 1 tool; left out (name taken): mcp_a_b_echo" in check.stdout.splitlines()
