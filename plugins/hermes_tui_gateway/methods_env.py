"""Reloading settings, ``cli.exec``, stopping background processes, the plugin list and a
session's tool set (docs/reference/tui-gateway.md#slash-commands-and-the-cli, #environment-and-processes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_tui_gateway import cli_exec
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_cmds as wr
from hermes_tui_gateway.params import GatewayError, bad

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params


async def reload_mcp(gw: Gateway, conn: Conn, p: Params) -> wr.ReloadMcpResult:
    """``reload.mcp``: re-read ``[mcp_servers]``, reconnect them, answer each one's state and tools.

    Without the ``mcp`` plugin there are no servers (``servers: []``).
    """
    wp.parse(wp.NoParams, p)
    servers = await gw.kernel.tool_sources.reload("mcp")
    for live in list(gw.lives.values()):
        live.stream.emit_info(force=True)
    return {"status": "reloaded", "servers": [s.as_dict() for s in servers]}


def _leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


async def reload_env(gw: Gateway, conn: Conn, p: Params) -> wr.ReloadEnvResult:
    """``reload.env``: re-read ``.env`` through the CLI's loader; report how many keys changed."""
    wp.parse(wp.NoParams, p)
    if gw.reload_settings is None:
        return {"updated": 0}
    before = _leaves(gw.kernel.settings.model_dump(mode="json"))
    try:
        await gw.reload_settings()
    except Exception as exc:
        raise GatewayError(5015, f"reload.env failed: {type(exc).__name__}") from exc
    after = _leaves(gw.kernel.settings.model_dump(mode="json"))
    return {"updated": sum(1 for k, v in after.items() if before.get(k) != v)}


async def process_stop(gw: Gateway, conn: Conn, p: Params) -> wr.ProcessStopResult:
    """``process.stop``: end the terminal tool's background processes (3 s grace)."""
    sid = wp.parse(wp.SessionParams, p).session_id
    lives = [gw.lives[sid]] if sid in gw.lives else ([] if sid else list(gw.lives.values()))
    try:
        killed = sum([await live.session.stop_processes(grace=3.0) for live in lives])
    except Exception as exc:
        raise GatewayError(5010, f"process.stop failed: {type(exc).__name__}") from exc
    return {"killed": killed}


async def plugins_manage(gw: Gateway, conn: Conn, p: Params) -> wr.PluginsList:
    """``plugins.manage``: ``list`` the loaded plugins; ``toggle`` is refused (5026): which plugins
    load is chosen at start (``--no-plugin``, ``HERMES_DISABLE_PLUGINS``)."""
    q = wp.parse(wp.PluginsManageParams, p)
    action = q.action if "action" in p else "list"
    if action == "toggle":
        name = q.name
        if not isinstance(name, str) or not name.strip():
            raise GatewayError(4019, "plugins.toggle requires a 'name'")
        raise GatewayError(
            5026, "plugins are chosen when Hermes starts: use --no-plugin or HERMES_DISABLE_PLUGINS"
        )
    if action != "list":
        raise GatewayError(4017, f"unknown plugins action: {action}")
    rows: list[wr.PluginRow] = []
    for record in sorted(gw.kernel.registry.plugins, key=lambda r: r.name):
        rows.append(
            {
                "name": record.name,
                "version": record.version or "",
                "description": record.failed or ", ".join(record.hooks),
                "source": "bundled" if record.first_party else "user",
                "status": "failed" if record.failed else "enabled",
            }
        )
    user = sum(1 for r in rows if r["source"] != "bundled")
    return {"plugins": rows, "user_count": user, "bundled_count": len(rows) - user}


async def tools_configure(gw: Gateway, conn: Conn, p: Params) -> wr.ToolsConfigured:
    """``tools.configure``: hide (``disable``) or show (``enable``) tools for one session.

    ``names`` are tool names or groups as ``SessionInfo.tools`` lists them; ``changed`` are the
    names that made a difference, ``unknown`` the ones that name nothing.
    """
    q = wp.parse(wp.ToolsConfigureParams, p)
    action = q.action
    if action not in ("enable", "disable"):
        raise GatewayError(4017, f"unknown tools action: {action}")
    names = q.names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise bad("names", "list of strings")
    wanted = [n.strip() for n in names if n.strip()]
    if not wanted:
        raise GatewayError(4018, "names required")
    live = await gw.live_checked(q.session_id)
    groups = gw.toolsets()
    hidden = set(live.session.hidden_tools)
    changed: list[str] = []
    unknown: list[str] = []
    for name in wanted:
        tools = set(groups.get(name, [])) or ({name} if name in gw.kernel.registry.tools else set())
        if not tools:
            unknown.append(name)
            continue
        before = set(hidden)
        hidden = hidden | tools if action == "disable" else hidden - tools
        if hidden != before:
            changed.append(name)
    live.session.set_tool_filter(frozenset(hidden))
    live.stream.emit_info(force=True)
    return {"changed": changed, "unknown": unknown, "missing_servers": [], "reset": False}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.slow.update(
        {
            "cli.exec": bind(cli_exec.cli_exec),
            "reload.mcp": bind(reload_mcp),
            "reload.env": bind(reload_env),
            "process.stop": bind(process_stop),
            "plugins.manage": bind(plugins_manage),
            "tools.configure": bind(tools_configure),
        }
    )
