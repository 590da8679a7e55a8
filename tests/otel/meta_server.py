"""An MCP server with one tool that says which ``traceparent`` its call's ``_meta`` carried."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("meta")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def trace_meta(ctx: Context) -> str:  # type: ignore[type-arg]
    """Say which traceparent the call's ``_meta`` carried ("none" without one)."""
    meta = ctx.request_context.meta or {}
    return f"traceparent: {dict(meta).get('traceparent') or 'none'}"


if __name__ == "__main__":
    server.run()
