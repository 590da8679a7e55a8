"""``session/load`` shows each tool call with the kind and title it had live
(docs/reference/acp.md#sessionload), even when the tool is no longer there: here a tool of
an MCP server the editor passed for the session only, replayed by a new agent process that was
given no server.
"""

from __future__ import annotations

import sys
from typing import Any

from tests.acp.conftest import Home
from tests.mcp.helpers import TINY


def _tool_calls(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("sessionUpdate") == "tool_call"]


async def test_replayed_calls_keep_their_live_kind_and_title(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    server = {"name": "tiny", "command": sys.executable, "args": [TINY], "env": []}
    sid = (await agent.new(home.workspace, mcpServers=[server]))["sessionId"]
    # echo is annotated read-only (kind read); write_note is destructive (kind delete, and asks).
    await agent.prompt(
        sid, '[[tool mcp_tiny_echo {"text": "hi"}]] [[tool mcp_tiny_write_note {"text": "x"}]]'
    )
    live = _tool_calls(agent.updates(sid))
    assert [(u["kind"], u["title"]) for u in live] == [("read", "tiny: echo"), ("delete", "tiny: write_note")]
    await agent.request("session/close", {"sessionId": sid})

    second = await spawn(initialize={})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    replayed = _tool_calls(second.updates(sid))
    assert [(u["toolCallId"], u["kind"], u["title"]) for u in replayed] == [
        (u["toolCallId"], u["kind"], u["title"]) for u in live
    ]
