"""``/reload`` (re-read settings, docs/reference/core.md#settings) and ``/reload-mcp`` (reconnect the
MCP servers, docs/mcp.md#reloading-and-status)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from hermes_core import CommandResult, ConfigError, HermesError

if TYPE_CHECKING:
    from hermes_core import CommandContext


async def reload_command(ctx: CommandContext) -> CommandResult:
    """Run ``/reload``: read the settings store again and apply it to the running kernel.

    Providers whose settings changed are rebuilt; a changed default model applies to sessions
    that have not chosen one.

    :param ctx: the dispatch context.
    :returns: what was reloaded; ``data`` holds ``reloaded``, ``config_path`` and ``model``.
    :raises ConfigError: the settings cannot be read or are invalid (nothing is applied).
    """
    kernel = ctx.kernel
    store = kernel.store
    if store is None:
        return CommandResult(
            kind="exec",
            output="Nothing to reload: this Hermes was started without a settings file.",
            data={"reloaded": False, "config_path": None, "model": kernel.default_model},
        )
    # Reading the file is blocking I/O; keep it off the event loop.
    try:
        raw = await asyncio.get_running_loop().run_in_executor(None, store.load)
    except HermesError:
        raise
    except Exception as exc:  # a store's own parse error (e.g. malformed TOML) becomes the core's
        raise ConfigError(f"could not read the settings: {exc}") from exc
    await kernel.apply_settings(raw)
    path = getattr(store, "config_path", None)
    where = f" from {path}" if path else ""
    model = kernel.default_model
    return CommandResult(
        kind="exec",
        output=f"Settings reloaded{where}. Default model: {model or 'none'}.",
        data={"reloaded": True, "config_path": str(path) if path else None, "model": model},
    )


async def reload_mcp_command(ctx: CommandContext) -> CommandResult:
    """Run ``/reload-mcp``: re-read ``[mcp_servers]``, reconnect every configured server, report them.

    :param ctx: the dispatch context.
    :returns: one line per server; ``data.servers`` holds each one's name, state, transport and
        tool count (and error).
    """
    kernel = ctx.kernel
    if kernel.tool_sources.get("mcp") is None:
        return CommandResult(
            kind="exec",
            output="MCP support is not loaded (the mcp plugin is not installed or is disabled).",
            data={"servers": []},
        )
    servers = await kernel.tool_sources.reload("mcp")
    if not servers:
        output = "No MCP servers are configured ([mcp_servers] in config.toml)."
    else:
        lines = [f"Reloaded {len(servers)} MCP server{'s' if len(servers) != 1 else ''}:"]
        for s in servers:
            tools = f"{s.tools} tool{'s' if s.tools != 1 else ''}"
            lines.append(
                f"  {s.name} ({s.transport}): {s.state}, {tools}{f' ({s.error})' if s.error else ''}"
            )
            if s.left_out:
                lines.append(f"    left out (name taken): {', '.join(s.left_out)}")
        output = "\n".join(lines)
    return CommandResult(kind="exec", output=output, data={"servers": [s.as_dict() for s in servers]})
