"""A NUL character in any path an editor sends is a ``-32602`` naming the field, never an internal
error (docs/reference/acp.md#json-rpc)."""

from __future__ import annotations

from typing import Any

from tests.acp.conftest import Home

NUL_DIR = "/tmp/not\x00a-folder"


async def test_every_path_param_with_a_nul_is_invalid_params(raw: Any, home: Home, tmp_path: Any) -> None:
    stderr = open(tmp_path / "stderr.txt", "wb")
    agent = await raw(stderr=stderr)
    await agent.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    opened = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    sid = opened["result"]["sessionId"]
    stdio = {"name": "srv", "command": "/bin/echo", "args": [], "env": []}
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("session/new", {"cwd": NUL_DIR, "mcpServers": []}, "cwd"),
        ("session/load", {"sessionId": sid, "cwd": NUL_DIR, "mcpServers": []}, "cwd"),
        ("session/resume", {"sessionId": sid, "cwd": NUL_DIR}, "cwd"),
        ("session/fork", {"sessionId": sid, "cwd": NUL_DIR}, "cwd"),
        ("session/list", {"cwd": NUL_DIR}, "cwd"),
        (
            "session/new",
            {"cwd": str(home.workspace), "mcpServers": [{**stdio, "command": "/bin/e\x00cho"}]},
            "mcpServers[0].command",
        ),
        (
            "session/new",
            {"cwd": str(home.workspace), "mcpServers": [{**stdio, "args": ["a\x00b"]}]},
            "mcpServers[0].args",
        ),
        (
            "session/new",
            {"cwd": str(home.workspace), "mcpServers": [{**stdio, "env": [{"name": "A", "value": "\x00"}]}]},
            "mcpServers[0].env",
        ),
        (
            "session/prompt",
            {
                "sessionId": sid,
                "prompt": [{"type": "resource_link", "uri": f"file://{NUL_DIR}", "name": "x"}],
            },
            "prompt",
        ),
        (
            "session/prompt",
            {
                "sessionId": sid,
                "prompt": [{"type": "resource_link", "uri": "file:///tmp/a%00b", "name": "x"}],
            },
            "prompt",
        ),
    ]
    for number, (method, params, field) in enumerate(cases, start=10):
        answer = await agent.request(number, method, params)
        error = answer.get("error")
        assert error is not None, (method, answer)
        assert error["code"] == -32602, (method, error)
        assert error["data"]["field"] == field, (method, error)
        assert "NUL" in error["message"], (method, error)
    # The session is untouched and still answers.
    done = await agent.request(
        99, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert done["result"] == {"stopReason": "end_turn"}
    stderr.flush()
    logged = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert "internal error" not in logged and "Traceback" not in logged
