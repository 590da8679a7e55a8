"""Checklist group A (process and framing), driven over raw pipes (docs/reference/acp.md#json-rpc)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.acp import wire
from tests.acp.conftest import HERMES, Home
from tests.timing import eventually, scaled

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


async def test_no_http_or_sdk_imports_on_the_acp_path(home: Home, tmp_path: Path) -> None:
    """#1: initialize + session/new + EOF imports no acp, aiohttp, httpx, openai or anthropic."""
    new = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": str(home.workspace), "mcpServers": []},
    }
    data = (json.dumps(INIT) + "\n" + json.dumps(new) + "\n").encode()
    process = await asyncio.create_subprocess_exec(
        HERMES,
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=home.env(PYTHONPROFILEIMPORTTIME="1"),
        cwd=str(tmp_path),
    )
    out, err = await asyncio.wait_for(process.communicate(data), 30)
    assert process.returncode == 0
    frames = [json.loads(line) for line in out.splitlines()]
    assert frames[0]["id"] == 0 and frames[0]["result"]["protocolVersion"] == 1
    assert any(f.get("id") == 1 and "sessionId" in f.get("result", {}) for f in frames)
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in err.decode().splitlines()
        if "import time:" in line
    }
    assert imported, "no import-time lines on stderr"
    for forbidden in ("acp", "aiohttp", "httpx", "openai", "anthropic"):
        assert forbidden not in imported, forbidden


async def test_stdout_stays_clean_while_tools_print(raw: Any, home: Home) -> None:
    """#2: every stdout line is one compact JSON-RPC object; tool output and prints go elsewhere."""
    agent = await raw()
    await agent.request(0, "initialize", {"protocolVersion": 1})
    new = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    await agent.request(2, "session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    prompt = '[[tool terminal {"command": "echo hi; python3 -c \\"print(42)\\""}]]'
    response = await agent.request(
        3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}
    )
    assert response["result"]["stopReason"] == "end_turn"
    for line in agent.raw:
        assert line.count(b"\n") == 1
        frame = json.loads(line)
        assert frame["jsonrpc"] == "2.0"
        assert line.rstrip(b"\n") == json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode()
    log = home.path / "logs" / "acp.log"
    assert log.exists()


async def test_bad_frames_get_errors_and_the_connection_stays_up(raw: Any) -> None:
    """#3: parse errors and invalid requests are answered; the next request works each time."""
    agent = await raw()
    cases: list[tuple[bytes, int]] = [
        (b"{not json\n", -32700),
        (b"42\n", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"session/list"}]\n', -32600),
        (b'{"jsonrpc":"2.0","id":5}\n', -32600),
        (b'{"jsonrpc":"1.0","id":6,"method":"session/list"}\n', -32600),
        (b"\xff\xfe\n", -32700),
    ]
    next_id = 100
    for data, code in cases:
        await agent.send(data)
        frame = await agent.read()
        assert frame["error"]["code"] == code, (data, frame)
        if code == -32700:
            assert frame["id"] is None
        ok = await agent.request(next_id, "session/list", {})
        assert ok["result"] == {"sessions": []}
        next_id += 1


async def test_oversized_line_is_rejected_and_reading_goes_on(raw: Any) -> None:
    """#3: a line over 64 MiB gets -32600 (id null) and the next request is answered."""
    agent = await raw()
    chunk = b"x" * (1 << 20)
    assert agent.process.stdin is not None
    agent.process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"pad":"')
    for _ in range(65):
        agent.process.stdin.write(chunk)
        await agent.process.stdin.drain()
    agent.process.stdin.write(b'"}}\n')
    frame = await agent.read(timeout=30)
    assert frame["error"]["code"] == -32600 and frame["id"] is None
    ok = await agent.request(2, "session/list", {})
    assert ok["result"] == {"sessions": []}


async def test_unknown_methods_ids_and_null_params(raw: Any) -> None:
    """#4: -32601 for unknown methods; ids keep their type; null params accepted."""
    agent = await raw()
    for index, method in enumerate(["ping", "_x/y", "session/delete", "logout"]):
        frame = await agent.request(10 + index, method, {})
        assert frame["error"]["code"] == -32601
    await agent.send({"jsonrpc": "2.0", "method": "_unknown/notification", "params": {}})
    await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}})
    frame = await agent.request("abc", "session/list", None)
    assert frame["id"] == "abc" and frame["result"] == {"sessions": []}
    frame = await agent.request(7, "session/list", None)
    assert frame["id"] == 7
    await agent.send(b'{"jsonrpc":"2.0","id":8,"method":"session/list","params":null}\n')
    frame = await agent.read()
    assert frame == {"jsonrpc": "2.0", "id": 8, "result": {"sessions": []}}
    # Notifications produced nothing: the only frames are the responses.
    assert all("id" in f for f in agent.lines)
    assert len(agent.lines) == 7


async def test_huge_prompt_is_truncated_and_unicode_round_trips(spawn: Any, home: Home) -> None:
    """#5: a ~50 MB embedded resource ends end_turn; "héllo 🌍" round-trips unchanged."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    blob = "a" * (50 * 1000 * 1000)
    result = await agent.request(
        "session/prompt",
        {
            "sessionId": sid,
            "prompt": [
                {"type": "text", "text": "summarise"},
                {"type": "resource", "resource": {"uri": "file:///big.txt", "text": blob}},
            ],
        },
    )
    assert result["stopReason"] == "end_turn"
    assert "truncated" in agent.text(sid)
    listed = await agent.request("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    await agent.prompt(sid, "héllo 🌍")
    assert agent.text(sid).endswith("You said: héllo 🌍")


async def test_eof_during_a_long_command_exits_quickly_leaving_no_child(raw: Any, home: Home) -> None:
    """#6: EOF during `terminal sleep 30` exits 0 within 2 s and kills the command."""
    agent = await raw()
    await agent.request(0, "initialize", {"protocolVersion": 1})
    new = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    await agent.request(2, "session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    marker = f"hermes-eof-test-{os.getpid()}"
    text = f'[[tool terminal {{"command": "sleep 30 # {marker}"}}]]'
    await agent.send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
        }
    )
    while True:
        frame = await agent.read()
        update = (frame.get("params") or {}).get("update") or {}
        if update.get("status") == "in_progress":
            break

    def command_pids() -> str:
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
        return found.stdout.strip()

    await eventually(command_pids, what="the sleep command to start")
    start = time.monotonic()
    assert agent.process.stdin is not None
    agent.process.stdin.close()
    code = await asyncio.wait_for(agent.process.wait(), scaled(5))
    assert code == 0
    assert time.monotonic() - start < scaled(2.0)
    await eventually(lambda: command_pids() == "", timeout=2, what="the command to be killed")


async def test_sigterm_and_sighup_exit_zero_sigint_is_ignored(raw: Any) -> None:
    """docs/reference/acp.md#stdio-hygiene-and-shutdown: SIGTERM or SIGHUP closes everything and exits 0;
    SIGINT is ignored."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        agent = await raw()
        await agent.request(0, "initialize", {"protocolVersion": 1})
        await agent.request(1, "session/list", {})
        agent.process.send_signal(signal.SIGINT)
        assert (await agent.request(2, "session/list", {}))["result"] == {"sessions": []}
        agent.process.send_signal(sig)
        assert await asyncio.wait_for(agent.process.wait(), 5) == 0


def test_schema_validation_catches_a_bad_frame() -> None:
    """The validator itself: an invalid kind and a string protocolVersion are caught."""
    bad: list[tuple[str, dict[str, Any]]] = [
        ("out", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        ("in", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "1"}}),
        (
            "in",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s",
                    "update": {
                        "sessionUpdate": "tool_call",
                        "toolCallId": "t",
                        "title": "x",
                        "kind": "bogus",
                    },
                },
            },
        ),
    ]
    assert len(wire.validate_frames(bad)) >= 2


async def test_start_up_failure_exits_1_with_a_message(home: Home, tmp_path: Path) -> None:
    """docs/reference/acp.md#the-process: a start-up failure exits 1; the message goes to stderr only."""
    home.write_config('model = "nosuchprovider:model"\n')
    data = (json.dumps(INIT) + "\n").encode()
    process = await asyncio.create_subprocess_exec(
        HERMES,
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=home.env(),
        cwd=str(tmp_path),
    )
    out, err = await asyncio.wait_for(process.communicate(data), 30)
    assert process.returncode == 1
    assert "nosuchprovider" in err.decode()
    for line in out.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_non_finite_ids_are_refused_and_run_nothing(raw: Any, home: Home) -> None:
    """An id like ``1e400`` (infinity once parsed) gets -32600 with id null; the prompt never runs."""
    agent = await raw()
    await agent.request(0, "initialize", {"protocolVersion": 1})
    new = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    params = json.dumps({"sessionId": sid, "prompt": [{"type": "text", "text": "must not run"}]})
    for raw_id, code in ((b"1e400", -32600), (b"-1e400", -32600), (b"NaN", -32700), (b"Infinity", -32700)):
        await agent.send(
            b'{"jsonrpc":"2.0","id":'
            + raw_id
            + b',"method":"session/prompt","params":'
            + params.encode()
            + b"}\n"
        )
        frame = await agent.read()
        while "method" in frame:  # e.g. the command list sent after session/new
            frame = await agent.read()
        assert frame["id"] is None and frame["error"]["code"] == code, (raw_id, frame)
    response = await agent.request(
        2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "real"}]}
    )
    assert response["result"]["stopReason"] == "end_turn"
    texts = [
        ((f.get("params") or {}).get("update") or {}).get("content", {}).get("text", "")
        for f in agent.lines
        if f.get("method") == "session/update"
    ]
    assert "must not run" not in "".join(texts)
    assert "".join(texts).endswith("You said: real")
