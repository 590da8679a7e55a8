"""An editor's ``mcpServers`` over ACP: per-session servers, their tools, approvals and ending."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.acp.conftest import Home
from tests.mcp.helpers import TINY, free_port
from tests.mcp.test_lifecycle import alive, pids
from tests.timing import eventually


def tool_updates(agent: Any, sid: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates(sid) if u.get("sessionUpdate") in ("tool_call", "tool_call_update")]


async def test_initialize_advertises_http_mcp(spawn: Any) -> None:
    agent = await spawn()
    result = await agent.initialize()
    assert result["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": False}


async def test_stdio_server_from_the_editor(spawn: Any, home: Home, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    agent = await spawn(initialize={})
    server = {
        "name": "tiny",
        "command": sys.executable,
        "args": [TINY],
        "env": [{"name": "TINY_PID_FILE", "value": str(pid_file)}],
    }
    sid = (await agent.new(home.workspace, mcpServers=[server]))["sessionId"]
    result = await agent.prompt(sid, '[[tool mcp_tiny_write_note {"text": "abc"}]]')
    assert result["stopReason"] == "end_turn"
    assert len(agent.client.permission_requests) == 1  # untrusted, not read-only: asked
    calls = tool_updates(agent, sid)
    (start,) = [u for u in calls if u["sessionUpdate"] == "tool_call"]
    assert start["kind"] == "delete" and start["title"].startswith("tiny: ")
    done = [u for u in calls if u.get("status") == "completed"]
    assert done and "wrote 3 characters" in str(done[-1].get("content"))
    assert "Done: wrote 3 characters" in agent.text(sid)

    # A read-only tool runs without asking; another session does not see this server.
    await agent.prompt(sid, '[[tool mcp_tiny_echo {"text": "ro"}]]')
    assert len(agent.client.permission_requests) == 1
    other = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(other, '[[tool mcp_tiny_echo {"text": "ro"}]]')
    assert "echo: ro" not in agent.text(other)

    await agent.prompt(sid, "/tools")  # the session's own tools are listed in that session only
    assert "mcp:tiny:" in agent.text(sid) and "mcp_tiny_write_note" in agent.text(sid)
    before = len(agent.text(other))
    await agent.prompt(other, "/tools")
    listing = agent.text(other)[before:]
    assert "The model sees" in listing and "mcp_tiny" not in listing

    (pid,) = pids(pid_file)
    assert alive(pid)
    await agent.request("session/close", {"sessionId": sid})
    await eventually(lambda: not alive(pid), timeout=15, what="the session's server ended")


async def test_http_server_from_the_editor(spawn: Any, home: Home) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, TINY, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        agent = await spawn(initialize={})
        server = {
            "type": "http",
            "name": "web",
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": [{"name": "X-Editor", "value": "yes"}],
        }
        sid = (await agent.new(home.workspace, mcpServers=[server]))["sessionId"]

        async def answered() -> bool:
            await agent.prompt(sid, '[[tool mcp_web_add {"a": 20, "b": 22}]]')
            return "Done: 42" in agent.text(sid)

        # The server process may still be starting: a prompt before it listens finds no tool.
        await eventually(answered, timeout=60, interval=0.5, what="the HTTP server's tool answered")
    finally:
        proc.terminate()
        proc.wait(10)


async def test_bad_server_entries_are_refused(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    cases = [
        [{"type": "sse", "name": "a", "url": "http://127.0.0.1:1/sse", "headers": []}],
        [
            {"name": "a", "command": "x", "args": [], "env": []},
            {"name": "a", "command": "y", "args": [], "env": []},
        ],
        [{"name": "a", "command": "", "args": [], "env": []}],
        [{"name": "a b", "command": "x", "args": [], "env": []}],
    ]
    for servers in cases:
        error = await agent.error("session/new", {"cwd": str(home.workspace), "mcpServers": servers})
        assert error["code"] == -32602, servers
    assert "unsupported MCP transport 'sse'" in str(
        await agent.error("session/new", {"cwd": str(home.workspace), "mcpServers": cases[0]})
    )


async def test_server_dying_mid_call_reaches_the_editor_and_the_session_goes_on(
    spawn: Any, home: Home
) -> None:
    agent = await spawn(initialize={})
    server = {"name": "tiny", "command": sys.executable, "args": [TINY], "env": []}
    sid = (await agent.new(home.workspace, mcpServers=[server]))["sessionId"]
    result = await agent.prompt(sid, "[[tool mcp_tiny_die {}]]")
    assert result["stopReason"] == "end_turn"
    failed = [u for u in tool_updates(agent, sid) if u.get("status") == "failed"]
    assert failed and "closed the connection during the call" in str(failed[-1].get("content"))

    async def back() -> bool:
        await agent.prompt(sid, '[[tool mcp_tiny_echo {"text": "again"}]]')
        return "echo: again" in agent.text(sid)

    await eventually(back, timeout=60, interval=0.5, what="the restarted server answered")


def _initialize_over_stdio(home: Home, *argv: str, **env: str) -> dict[str, Any]:
    """Answer one ``initialize`` from a real ``hermes ... acp`` and return its result."""
    import json

    from tests.acp.conftest import HERMES

    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    done = subprocess.run(
        [HERMES, *argv],
        input=json.dumps(request) + "\n",
        env=home.env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    reply = json.loads(done.stdout.splitlines()[0])
    return reply["result"]  # type: ignore[no-any-return]


def test_a_deselected_mcp_plugin_is_not_advertised(home: Home) -> None:
    # The early answer (before plugins load) follows the environment's selection ...
    early = _initialize_over_stdio(home, "acp", HERMES_DISABLE_PLUGINS="mcp")
    assert early["agentCapabilities"]["mcpCapabilities"] == {"http": False, "sse": False}
    # ... and the answer after loading follows what actually loaded.
    loaded = _initialize_over_stdio(home, "--no-plugin", "mcp", "acp")
    assert loaded["agentCapabilities"]["mcpCapabilities"] == {"http": False, "sse": False}
    selected = _initialize_over_stdio(home, "acp")
    assert selected["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": False}


def test_the_acp_guide_lists_editor_mcp_servers_as_supported() -> None:
    """The guide's feature table matches what ``initialize`` advertises (``mcpCapabilities``)."""
    guide = (Path(__file__).parents[2] / "docs/protocols/acp.md").read_text(encoding="utf-8")
    table = guide.split("## 3. What is supported", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "MCP" in line]
    assert rows and all("not yet" not in row for row in rows), rows
    assert any(row.rstrip(" |").split("|")[-1].strip().startswith("yes") for row in rows), rows
