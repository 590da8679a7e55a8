"""Malformed input never kills the process or a session (docs/reference/acp.md#json-rpc, issue item 6)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.acp import wire
from tests.acp.conftest import Home

GARBAGE: list[Any] = [None, 0, -1, 1.5, True, "", "x" * 1000, [], [1, "a"], {}, {"a": {"b": None}}]


async def test_garbage_params_on_every_method(raw: Any, home: Home, tmp_path: Any) -> None:
    """Every method with wrong-typed params answers an error; the session still works after."""
    stderr = open(tmp_path / "stderr.txt", "wb")
    agent = await raw(stderr=stderr)
    await agent.request(0, "initialize", {"protocolVersion": 1})
    sid = (await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []}))["result"][
        "sessionId"
    ]
    methods = [
        "authenticate",
        "session/new",
        "session/load",
        "session/resume",
        "session/list",
        "session/close",
        "session/fork",
        "session/set_mode",
        "session/set_config_option",
        "session/set_model",
        "session/prompt",
    ]
    fields = [
        "sessionId",
        "cwd",
        "mcpServers",
        "prompt",
        "modeId",
        "configId",
        "value",
        "modelId",
        "methodId",
        "cursor",
    ]
    next_id = 10
    for method in methods:
        for value in GARBAGE:
            params = {name: value for name in fields}
            frame = await agent.request(next_id, method, params)
            next_id += 1
            if method == "session/list" and value is None:
                assert frame["result"] == {"sessions": []}  # both fields are optional
                continue
            assert "error" in frame, (method, value, frame)
            assert frame["error"]["code"] in (-32602, -32002, -32000), (method, value, frame)
        if method == "session/close":
            continue
        frame = await agent.request(next_id, method, {"sessionId": sid, "prompt": [{"type": 5}], "cwd": 3})
        next_id += 1
        assert "error" in frame
    for notification in ("session/cancel", "$/cancel_request"):
        for value in GARBAGE:
            await agent.send(
                {"jsonrpc": "2.0", "method": notification, "params": {"sessionId": value, "requestId": value}}
            )
    frame = await agent.request(
        next_id, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "still alive"}]}
    )
    assert frame["result"] == {"stopReason": "end_turn"}
    assert agent.process.returncode is None
    stderr.close()
    text = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in text and "info:" not in text


async def test_start_up_failure_reaches_the_editor_with_its_reason(raw: Any, home: Home) -> None:
    """Requests sent around a start-up that fails are answered with the reason; at EOF the exit is 1."""
    home.write_config('model = "mock:script"\n[storage]\npath = "/dev/null/hermes.sqlite3"\n')
    agent = await raw()
    await agent.request(0, "initialize", {"protocolVersion": 1})
    frame = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    error = frame["error"]
    assert error["code"] == -32603
    assert "could not start" in error["message"]
    assert "/dev/null/hermes.sqlite3" in error["message"]
    assert "storage.path" in error["data"]["reason"]
    assert not wire.check("Error", error)
    # A request sent after the failure is answered the same way: the agent has not vanished.
    later = await agent.request(2, "session/list", {})
    assert later["error"]["data"]["reason"] == error["data"]["reason"]
    assert agent.process.stdin is not None
    agent.process.stdin.close()
    assert await asyncio.wait_for(agent.process.wait(), 10) == 1
