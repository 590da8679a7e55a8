"""The early handshake (docs/reference/acp.md#start-up): ``initialize`` is answered before the plugins load.

A throwaway plugin that takes seconds to import (and prints to stdout while it does) stands in
for a slow machine: the reply must not wait for it, and stdout must still carry frames only.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from tests.acp import wire
from tests.acp.conftest import Home
from tests.cli.cli_helpers import write_distribution

SLOW_IMPORT_S = 3.0

SLOW_PLUGIN = f'''
"""A plugin that is slow to import and writes to stdout while it loads."""
import time

print("stray bytes from a plugin import", flush=True)
time.sleep({SLOW_IMPORT_S})
'''


def _slow_env(home: Home, root: Path) -> dict[str, str]:
    write_distribution(root, "slowpoke", {"slowpoke_plugin": SLOW_PLUGIN}, {"slowpoke": "slowpoke_plugin"})
    return home.env(PYTHONPATH=str(root))


async def test_initialize_does_not_wait_for_plugins(raw: Any, home: Home, tmp_path: Path) -> None:
    """The reply comes long before a 3 s plugin import ends; stray prints never reach stdout."""
    env = _slow_env(home, tmp_path / "dist")
    started = time.monotonic()
    agent = await raw(env=env, stderr=asyncio.subprocess.PIPE)
    reply = await agent.request(0, "initialize", {"protocolVersion": 1})
    elapsed = time.monotonic() - started
    assert reply["result"]["protocolVersion"] == 1
    assert wire.check("InitializeResponse", reply["result"]) == []
    assert elapsed < SLOW_IMPORT_S - 0.5, f"initialize took {elapsed:.2f} s"

    # Once the slow plugin has loaded, everything works and stdout held only JSON frames.
    created = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    assert "sessionId" in created["result"], created
    assert agent.process.stdin is not None
    agent.process.stdin.close()
    assert await asyncio.wait_for(agent.process.wait(), 10) == 0
    assert agent.process.stdout is not None and agent.process.stderr is not None
    rest = await agent.process.stdout.read()
    for line in rest.splitlines():
        json.loads(line)
    assert b"stray bytes" in await agent.process.stderr.read()
    log = (home.path / "logs" / "acp.log").read_text()
    assert "initialize answered before the plugins loaded" in log


async def test_other_first_lines_go_to_the_peer(raw: Any, home: Home, tmp_path: Path) -> None:
    """A first line that is not a clean initialize is answered by the peer, nothing is lost."""
    agent = await raw()
    await agent.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}')
    await agent.send(b"\n")
    parse_error = await agent.read()
    assert parse_error["error"]["code"] == -32700
    # The same process still answers a proper initialize and then real work.
    reply = await agent.request(2, "initialize", {"protocolVersion": 1})
    assert reply["result"]["protocolVersion"] == 1
    created = await agent.request(3, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    assert "sessionId" in created["result"]


async def test_initialize_error_answered_early(raw: Any) -> None:
    """A bad protocolVersion in the very first line gets -32602 from the early step too."""
    agent = await raw()
    error = await agent.request(0, "initialize", {"protocolVersion": "1"})
    assert error["error"]["code"] == -32602
    reply = await agent.request(1, "initialize", {"protocolVersion": 1})
    assert reply["result"]["protocolVersion"] == 1


async def test_pipelined_requests_after_initialize(raw: Any, home: Home) -> None:
    """initialize and session/new written in one chunk: both are answered, in order."""
    agent = await raw()
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    new = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": str(home.workspace), "mcpServers": []},
    }
    await agent.send((json.dumps(init) + "\n" + json.dumps(new) + "\n").encode())
    first = await agent.read()
    second = await agent.read()
    assert first["id"] == 0 and "result" in first
    assert second["id"] == 1 and "sessionId" in second["result"]
