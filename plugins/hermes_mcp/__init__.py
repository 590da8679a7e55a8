"""MCP servers as tool sources (docs/mcp.md): servers from ``[mcp_servers.NAME]`` and from ACP."""
