"""Register the ``mcp`` tool source (docs/mcp.md): MCP servers' tools as Hermes tools.

Cheap to import: the manager loads when the kernel starts, its configuration reader only when
servers are configured, and the ``mcp`` SDK only once one starts; the servers connect in the
background, so no transport waits for them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from hermes_core import ConfigSection, PolicyDecision, hookimpl

if TYPE_CHECKING:
    from hermes_core import Kernel, Session, ToolCallInfo


@contextlib.asynccontextmanager
async def _serve(kernel: Kernel) -> AsyncIterator[None]:
    from hermes_mcp.manager import McpManager

    manager = McpManager(kernel)
    kernel.tool_sources.add(manager)
    try:
        manager.start()
        yield
    finally:
        kernel.tool_sources.remove(manager)
        await manager.close()


@hookimpl
def hermes_lifespan(kernel: Kernel) -> Any:
    """Start the configured MCP servers with the kernel and end them (and sessions' own) with it."""
    return _serve(kernel)


@hookimpl
def hermes_config_sections() -> ConfigSection:
    """``[mcp_servers.NAME]``: one table per server, so ``hermes config`` knows their keys."""
    return ConfigSection(
        name="mcp_servers",
        summary="MCP servers whose tools Hermes offers (docs/mcp.md)",
        settings_model="hermes_mcp.settings:ServerTable",
        entries=True,
    )


@hookimpl
def hermes_before_tool_call(session: Session, call: ToolCallInfo) -> PolicyDecision | None:
    """An untrusted server's tool that is not annotated read-only always asks."""
    if not call.name.startswith("mcp_"):
        return None
    from hermes_mcp.manager import McpManager

    manager = session.kernel.tool_sources.get("mcp")
    if not isinstance(manager, McpManager) or not manager.asks(call.name, session.id):
        return None
    server = manager.server_of(call.name, session.id)
    return PolicyDecision("ask", f"MCP server {server} is untrusted and this tool is not read-only")
