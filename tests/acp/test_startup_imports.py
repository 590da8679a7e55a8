"""What the first ``session/new`` of ``hermes acp`` imports (docs/reference/acp.md#start-up).

A backend that is not configured costs nothing: with SQLite storage, the in-memory bus, no MCP
server and no provider key, no database driver, Redis client, MCP SDK or HTTP client is imported,
and neither are the parts of plugins that only a configured backend needs. A throwaway plugin
records ``sys.modules`` when the kernel stops, after the session was created; the control case
(an editor MCP server) shows the record sees a lazily imported module once it is needed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.acp.conftest import Home
from tests.cli.cli_helpers import write_distribution

RECORDER = '''
"""Writes the names in sys.modules to $MODULES_OUT when the kernel stops."""
import contextlib
import os
import sys

from hermes_core import hookimpl


@contextlib.asynccontextmanager
async def _record(kernel):
    yield
    with open(os.environ["MODULES_OUT"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))


@hookimpl
def hermes_lifespan(kernel):
    return _record(kernel)
'''

#: Top-level packages of backends and SDKs the default ACP session never needs.
NEVER_TOP = ("psycopg", "psycopg_pool", "redis", "mcp", "aiohttp", "openai", "anthropic", "opentelemetry")
#: Plugin modules that only a configured backend (or a keyed provider) needs.
NEVER_MODULES = (
    "hermes_mcp.runner",
    "hermes_anthropic.provider",
    "hermes_otel.tracer",
)


async def _modules_after_session_new(raw: Any, home: Home, root: Path, mcp_servers: list[Any]) -> set[str]:
    dist = root / "dist"
    write_distribution(dist, "recorder", {"modules_recorder": RECORDER}, {"recorder": "modules_recorder"})
    out = root / "modules.txt"
    agent = await raw(env=home.env(PYTHONPATH=str(dist), MODULES_OUT=str(out)))
    reply = await agent.request(0, "initialize", {"protocolVersion": 1})
    assert reply["result"]["protocolVersion"] == 1
    created = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": mcp_servers})
    assert "sessionId" in created["result"], created
    assert agent.process.stdin is not None
    agent.process.stdin.close()
    assert await asyncio.wait_for(agent.process.wait(), 20) == 0
    return set(out.read_text(encoding="utf-8").split("\n"))


async def test_unconfigured_backends_are_not_imported(raw: Any, home: Home, tmp_path: Path) -> None:
    modules = await _modules_after_session_new(raw, home, tmp_path, [])
    # The record is real: the ACP dispatcher and the SQLite store were imported.
    assert {"jsonrpcserver", "hermes_acp.sessions", "hermes_sqlite.store", "hermes_mcp.manager"} <= modules
    loaded = sorted(m for m in modules if m.split(".")[0] in NEVER_TOP or m in NEVER_MODULES)
    assert loaded == [], f"imported without being configured: {loaded}"
    backends = [m for m in modules if m.startswith(("hermes_postgres.", "hermes_redis."))]
    assert [m for m in backends if not m.endswith(".plugin")] == []


async def test_record_sees_a_backend_once_configured(raw: Any, home: Home, tmp_path: Path) -> None:
    server = {"name": "probe", "command": "/bin/false", "args": [], "env": []}
    modules = await _modules_after_session_new(raw, home, tmp_path, [server])
    assert "hermes_mcp.runner" in modules
