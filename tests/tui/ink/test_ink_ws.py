"""Upstream's Ink TUI attached over WebSocket (``HERMES_TUI_GATEWAY_URL``) to ``hermes tui --ws``:
start, a prompt and an approval (docs/protocols/tui-gateway.md#attaching-to-a-running-gateway)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tui.client import WsClient, WsServer
from tests.tui.ink.bundle import skip_unless_wanted
from tests.tui.ink.screen import approval_shown

pytestmark = skip_unless_wanted
TOKEN = "ink-attach-token-0123456789"


@pytest.fixture
def server(home: Path) -> Iterator[WsServer]:
    srv = WsServer(home, TOKEN)
    yield srv
    srv.stop()


async def _history(url: str, sid: str) -> list[dict[str, Any]]:
    client = await WsClient.connect(url, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        result = await client.call("session.history", session_id=sid)
        return list(result["messages"])
    finally:
        await client.close()


def test_attach_start_prompt_and_approval(ink, server: WsServer, workspace: Path) -> None:
    tui = ink(attach_url=f"{server.url}?token={TOKEN}")
    screen = tui.ready()
    sid = re.search(r"Session: (\S+)", screen).group(1)  # type: ignore[union-attr]
    tui.submit("hello over the socket")
    tui.wait_for("You said: hello over the socket")
    tui.submit('go [[tool terminal {"command": "echo hermes-guard-test"}]]')
    tui.wait_for(approval_shown, what="the approval dialog")
    tui.keys("2")  # allow for this session
    screen = tui.wait_for(lambda s: "Done: hermes-guard-test" in s and "─ ready" in s)
    assert "error" not in screen.lower()
    messages = asyncio.run(_history(server.url, sid))
    texts = [m["text"] for m in messages]
    assert texts[:2] == ["hello over the socket", "You said: hello over the socket"]
    assert texts[-1] == "Done: hermes-guard-test"
    assert any(m["role"] == "tool" and m["name"] == "terminal" for m in messages)
    assert TOKEN not in "".join(server.stderr_lines)
