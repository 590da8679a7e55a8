"""An MCP tool's image reaches the editor: ``tool_call_update`` carries an image content block,
live and again when ``session/load`` replays the stored session in a new ``hermes acp``."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from tests.acp.conftest import Home
from tests.mcp.helpers import TINY

PICTURE = b"\x89PNG\r\n\x1a\ntiny-picture"  # what tiny_server's ``picture`` tool returns
IMAGE = {
    "type": "content",
    "content": {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PICTURE).decode("ascii")},
}
CAPTION = {"type": "content", "content": {"type": "text", "text": "a tiny picture"}}


def completed(agent: Any, sid: str) -> list[dict[str, Any]]:
    return [
        u
        for u in agent.updates(sid)
        if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "completed"
    ]


async def test_image_result_reaches_the_editor_and_survives_load(
    spawn: Any, home: Home, tmp_path: Path
) -> None:
    agent = await spawn(initialize={})
    server = {"name": "tiny", "command": sys.executable, "args": [TINY], "env": []}
    sid = (await agent.new(home.workspace, mcpServers=[server]))["sessionId"]
    result = await agent.prompt(sid, "[[tool mcp_tiny_picture {}]]")
    assert result["stopReason"] == "end_turn"
    (done,) = completed(agent, sid)
    assert done["content"] == [CAPTION, IMAGE]
    await agent.request("session/close", {"sessionId": sid})

    second = await spawn(initialize={})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    (replayed,) = completed(second, sid)
    assert replayed["content"] == [CAPTION, IMAGE]
