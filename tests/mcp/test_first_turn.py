"""Servers from config.toml serve the first turn: a turn waits for those still connecting (each at
most its connect timeout), goes on without the ones that failed and says so once per session."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hermes_core import TextDelta, TurnCompleted
from tests.acp.conftest import Home
from tests.mcp.helpers import TINY, kernel_with, run_turn, stdio_server
from tests.mcp.test_surfaces import server_toml
from tests.timing import eventually, scaled
from tests.tui.client import HERMES, TuiProcess, hermes_env, write_config

ECHO = '[[tool mcp_tiny_echo {"text": "first"}]]'


def done_of(events: list[object]) -> TurnCompleted:
    (done,) = [e for e in events if isinstance(e, TurnCompleted)]
    return done


def text_of(events: list[object]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_a_turn_waits_for_a_configured_server_still_connecting(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    kernel = kernel_with({"tiny": stdio_server(env={"TINY_WAIT_FOR": str(gate)})})
    async with kernel.running():
        session = await kernel.open_session(None, source="t", owner="t", cwd=tmp_path)
        assert [s.state for s in kernel.tool_sources.status()] == ["starting"]
        turn = await session.submit(ECHO, owner="t", answerable=frozenset())
        # The server cannot answer before the gate exists: the turn is waiting for it.
        await eventually(lambda: session.busy, what="the turn started")
        assert kernel.registry.tool("mcp_tiny_echo") is None
        gate.write_text("open")
        events = [e async for e in turn.events()]
        assert (await turn.outcome).status == "complete"
    assert text_of(events) == "Done: echo: first"
    assert done_of(events).warnings == ()


async def test_a_turn_goes_on_without_failed_servers_and_says_so_once(tmp_path: Path) -> None:
    mute = {"command": "sh", "args": ["-c", "exec sleep 1000"], "connect_timeout_s": 1}
    gone = {"command": str(tmp_path / "no-such-binary")}
    kernel = kernel_with({"tiny": stdio_server(), "mute": mute, "gone": gone})
    async with kernel.running():
        session = await kernel.open_session(None, source="t", owner="t", cwd=tmp_path)
        began = time.monotonic()
        events, _ = await run_turn(session, ECHO)
        # tiny's connect timeout is 60 s, but it answers in time; mute gives up after its 1 s.
        assert time.monotonic() - began < scaled(30)
        assert text_of(events) == "Done: echo: first"
        warnings = done_of(events).warnings
        assert len(warnings) == 2, warnings
        (mute_note,) = [w for w in warnings if "'mute'" in w]
        (gone_note,) = [w for w in warnings if "'gone'" in w]
        assert mute_note.startswith("MCP server 'mute' is not available (") and "timed out" in mute_note
        assert "command not found" in gone_note and gone_note.endswith("going on without its tools")

        again, _ = await run_turn(session, '[[tool mcp_tiny_echo {"text": "again"}]]')
        assert text_of(again) == "Done: echo: again"
        assert done_of(again).warnings == ()  # said once for this session

        other = await kernel.open_session(None, source="t", owner="t", cwd=tmp_path)
        fresh, _ = await run_turn(other, "hello")
        assert sorted(w.split("'")[1] for w in done_of(fresh).warnings) == ["gone", "mute"]


def test_hermes_run_uses_a_configured_server_on_its_only_turn(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        'model = "mock:echo"\n' + server_toml() + f'[mcp_servers.gone]\ncommand = "{tmp_path / "nope"}"\n',
    )
    result = subprocess.run(
        [HERMES, "run", ECHO],
        env=hermes_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done: echo: first\n"
    assert "✓ mcp_tiny_echo: echo: first" in result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: MCP server")]
    assert len(warnings) == 1 and "'gone'" in warnings[0] and "command not found" in warnings[0]


def test_a_tui_prompt_right_after_start_sees_the_configured_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n' + server_toml())
    with TuiProcess(home, cwd=home) as tui:
        tui.wait_event("", "gateway.ready", timeout=20)
        sid = tui.create()
        tui.call("prompt.submit", session_id=sid, text=ECHO)
        done = tui.wait_complete(sid, timeout=scaled(60))
        assert done["status"] == "complete" and done["text"] == "Done: echo: first"
        assert "warning" not in done
        result = tui.wait_event(sid, "tool.complete")["payload"]
        assert result["name"] == "mcp_tiny_echo" and result["result"] == "echo: first"


def test_tui_said_once_per_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n' + f'[mcp_servers.gone]\ncommand = "{tmp_path / "nope"}"\n')
    with TuiProcess(home, cwd=home) as tui:
        tui.wait_event("", "gateway.ready", timeout=20)
        sid = tui.create()
        first = tui.turn(sid, "hello", timeout=scaled(60))
        assert first["text"] == "You said: hello"
        assert first["warning"].startswith("MCP server 'gone' is not available (")
        second = tui.turn(sid, "again", timeout=scaled(60))
        assert second["text"] == "You said: again" and "warning" not in second


async def test_acp_first_prompt_sees_the_configured_tools(spawn: Any, home: Home) -> None:
    home.write_config('model = "mock:echo"\n' + server_toml())
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    result = await agent.prompt(sid, ECHO)
    assert result["stopReason"] == "end_turn"
    assert "Done: echo: first" in agent.text(sid)


async def test_api_first_request_sees_the_configured_tools(tmp_path: Path) -> None:
    from tests.api.api_helpers import call, start_server

    config = 'model = "mock:echo"\n' + server_toml() + '[mcp_servers.gone]\ncommand = "/nonexistent/x"\n'
    server = start_server(tmp_path / "home", config=config)
    try:
        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": ECHO}]}
        reply = await call(server, "POST", "/v1/chat/completions", body, timeout=scaled(120))
    finally:
        server.stop()
    assert reply.status == 200, reply.text
    answer = reply.json
    assert answer["choices"][0]["message"]["content"] == "Done: echo: first"
    (note,) = answer["hermes"]["warnings"]
    assert note.startswith("MCP server 'gone' is not available (") and "command not found" in note


def test_start_up_still_never_waits(tmp_path: Path) -> None:
    """`hermes run /help` needs no tools: it neither waits for a server that cannot connect nor says
    anything about it beyond the log line."""
    gate = tmp_path / "never"
    write_config(
        tmp_path,
        'model = "mock:echo"\n'
        + f"[mcp_servers.slow]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(TINY)}]\n"
        + f'env = {{ TINY_WAIT_FOR = "{gate}" }}\nconnect_timeout_s = 600\n',
    )
    began = time.monotonic()
    result = subprocess.run(
        [HERMES, "run", "/help"],
        env=hermes_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < scaled(30)
    assert "Warning: MCP" not in result.stderr
