"""Servers that die, hang or never start; reload; nothing left running when sessions close."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hermes_core.testing import MemorySettingsStore
from tests.mcp.helpers import kernel_with, run_turn, stdio_server
from tests.timing import eventually, scaled


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purpose. It may also be reaped between
    # the two looks, and then reading its /proc entry fails.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def test_server_that_dies_mid_call_is_an_error_and_restarts(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    kernel = kernel_with({"tiny": stdio_server(trust="full", env={"TINY_PID_FILE": str(pid_file)})})
    async with kernel.running():
        await eventually(lambda: kernel.tool_sources.status()[0].state == "ready", timeout=60, what="ready")
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        _, (done,) = await run_turn(session, "[[tool mcp_tiny_die {}]]")
        assert done.is_error
        assert "MCP server 'tiny'" in done.result_text and "connection" in done.result_text
        # The session goes on, and the server comes back with a new process.
        await eventually(lambda: len(pids(pid_file)) == 2, timeout=60, what="a restart")
        await eventually(
            lambda: kernel.tool_sources.status()[0].state == "ready", timeout=60, what="ready again"
        )
        _, (done,) = await run_turn(session, '[[tool mcp_tiny_echo {"text": "back"}]]')
        assert done.result_text == "echo: back"
    assert not any(alive(p) for p in pids(pid_file))


async def test_server_that_never_answers_times_out_and_is_restarted(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    kernel = kernel_with(
        {"tiny": stdio_server(timeout_s=1, trust="full", env={"TINY_PID_FILE": str(pid_file)})}
    )
    async with kernel.running():
        await eventually(lambda: kernel.tool_sources.status()[0].state == "ready", timeout=60, what="ready")
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        _, (done,) = await run_turn(session, "[[tool mcp_tiny_hang {}]]")
        assert done.is_error and done.result_text == "MCP server 'tiny' did not answer within 1 s"
        assert done.duration_s < 10
        first = pids(pid_file)[0]
        await eventually(lambda: not alive(first), timeout=30, what="the hung server ended")
        await eventually(
            lambda: kernel.tool_sources.status()[0].state == "ready", timeout=60, what="ready again"
        )
        _, (done,) = await run_turn(session, '[[tool mcp_tiny_add {"a": 1, "b": 1}]]')
        assert done.result_text == "2"


async def test_bad_command_fails_clearly_and_opens_the_circuit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_mcp import runner

    monkeypatch.setattr(runner, "BACKOFF_S", (0.01,))
    kernel = kernel_with({"nope": {"command": str(tmp_path / "no-such-server")}})
    async with kernel.running():
        status = await eventually(
            lambda: [s for s in kernel.tool_sources.status() if s.state == "circuit_open"],
            timeout=30,
            what="circuit",
        )
        assert "command not found" in (status[0].error or "") and "no-such-server" in (status[0].error or "")
        assert status[0].tools == 0
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        events, completed = await run_turn(session, "hello")  # the session works without the server
        assert completed == [] and "hello" in "".join(getattr(e, "text", "") for e in events)


async def test_reload_after_the_config_changed(tmp_path: Path) -> None:
    store = MemorySettingsStore({"mcp_servers": {"one": stdio_server(include=["echo"])}})
    kernel = kernel_with({"one": stdio_server(include=["echo"])})
    kernel.store = store
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_one_echo"), timeout=60, what="first config")
        store.config["mcp_servers"] = {
            "two": stdio_server(include=["add", "pid"]),
            "broken": {"command": str(tmp_path / "missing")},
        }
        result = {s.name: s for s in await kernel.tool_sources.reload()}
        assert set(result) == {"two", "broken"}
        assert (result["two"].state, result["two"].tools) == ("ready", 2)
        assert result["broken"].state in ("restarting", "circuit_open")
        assert "command not found" in (result["broken"].error or "")
        assert kernel.registry.tool("mcp_one_echo") is None
        assert kernel.registry.tool("mcp_two_add") is not None


async def test_sessions_own_servers_end_with_them(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    kernel = kernel_with({})
    entry = {
        "name": "mine",
        "command": stdio_server()["command"],
        "args": stdio_server()["args"],
        "env": [{"name": "TINY_PID_FILE", "value": str(pid_file)}],
    }
    async with kernel.running():
        one = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        two = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        await kernel.tool_sources.attach("mcp", one.id, [entry])
        await eventually(
            lambda: kernel.registry.tool("mcp_mine_echo", one.id), timeout=60, what="session tools"
        )
        assert kernel.registry.tool("mcp_mine_echo") is None  # not everyone's
        assert kernel.registry.tool("mcp_mine_echo", two.id) is None
        _, (done,) = await run_turn(one, '[[tool mcp_mine_echo {"text": "own"}]]')
        assert done.result_text == "echo: own"
        _, (done,) = await run_turn(two, '[[tool mcp_mine_echo {"text": "own"}]]')
        assert done.is_error  # the other session has no such tool
        (pid,) = pids(pid_file)
        await one.close()
        assert not alive(pid)
        assert kernel.tool_sources.status(one.id) == []


async def test_closing_while_the_server_still_starts_leaves_nothing(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    kernel = kernel_with({})
    entry = {
        "name": "slow",
        "command": stdio_server()["command"],
        "args": stdio_server()["args"],
        "env": [{"name": "TINY_PID_FILE", "value": str(pid_file)}],
    }
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        await kernel.tool_sources.attach("mcp", session.id, [entry])
        # The process exists (it wrote its pid first thing) but has not answered the handshake yet.
        await eventually(lambda: pids(pid_file), timeout=60, what="the server process started")
        (status,) = kernel.tool_sources.status(session.id)
        await session.close()
        (pid,) = pids(pid_file)
        await eventually(lambda: not alive(pid), timeout=15, what="the starting server ended")
        assert kernel.tool_sources.status(session.id) == []
    assert status.state in ("starting", "ready")


async def test_interrupting_a_call_cancels_it_and_the_server_stays(tmp_path: Path) -> None:
    from hermes_core import ToolExecuting

    kernel = kernel_with({"tiny": stdio_server(trust="full", timeout_s=120)})
    async with kernel.running():
        await eventually(lambda: kernel.tool_sources.status()[0].state == "ready", timeout=60, what="ready")
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        marker = tmp_path / "cancelled"
        turn = await session.submit(
            f"[[tool mcp_tiny_wait_cancel {json.dumps({'marker': str(marker)})}]]", owner="t"
        )
        started = None
        async for event in turn.events():
            if isinstance(event, ToolExecuting):
                waiting = Path(f"{marker}.started")
                await eventually(waiting.exists, timeout=15, what="the server runs the call")
                started = time.monotonic()
                await session.interrupt()
        outcome = await turn.outcome
        assert started is not None and time.monotonic() - started < scaled(10)
        assert outcome.status == "interrupted"
        # The server was told: its handler was cancelled (not left running).
        await eventually(marker.exists, timeout=15, what="the server saw the cancellation")
        assert kernel.tool_sources.status()[0].state == "ready"  # a cancelled call is no failure


async def test_server_that_never_answers_the_handshake(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    mute = {
        "command": "sh",
        "args": ["-c", f"echo $$ >> {pid_file}; exec sleep 1000"],
        "connect_timeout_s": 1,
    }
    kernel = kernel_with({"mute": mute})
    async with kernel.running():
        (status,) = await eventually(
            lambda: [s for s in kernel.tool_sources.status() if s.state != "starting"],
            timeout=60,
            what="a verdict",
        )
        assert status.state == "restarting" and "timed out" in (status.error or "")
        assert kernel.registry.tool("mcp_mute_echo") is None
        first = pids(pid_file)[0]
        await eventually(lambda: not alive(first), timeout=30, what="the mute server ended")
    assert not any(alive(p) for p in pids(pid_file))
