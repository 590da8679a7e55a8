"""A ``\\ud800`` escape (a lone surrogate, which no UTF-8 text can hold) is a parse error.

Decoded as is, the prompt's text could never be stored: the turn failed on storage and every
later prompt of the session failed the same way. The frame is refused instead, and the session
keeps working.
"""

from __future__ import annotations

from typing import Any

from tests.acp.conftest import Home


async def test_a_lone_surrogate_is_a_parse_error_and_the_session_keeps_working(raw: Any, home: Home) -> None:
    agent = await raw()
    await agent.request(0, "initialize", {"protocolVersion": 1})
    new = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    for text in ("x\\ud800y", "\\udc00", "ok \\ud83d"):
        params = '{"sessionId":"' + sid + '","prompt":[{"type":"text","text":"' + text + '"}]}'
        await agent.send(
            b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":' + params.encode() + b"}\n"
        )
        frame = await agent.read()
        while "method" in frame:  # e.g. the command list sent after session/new
            frame = await agent.read()
        assert frame["id"] is None and frame["error"]["code"] == -32700, (text, frame)
    pair = await agent.request(
        2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "smile \U0001f600"}]}
    )
    assert pair["result"]["stopReason"] == "end_turn"
    response = await agent.request(
        3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "real"}]}
    )
    assert response["result"]["stopReason"] == "end_turn"
    texts = "".join(
        ((f.get("params") or {}).get("update") or {}).get("content", {}).get("text", "")
        for f in agent.lines
        if f.get("method") == "session/update"
    )
    assert "You said: smile \U0001f600" in texts and texts.endswith("You said: real")
