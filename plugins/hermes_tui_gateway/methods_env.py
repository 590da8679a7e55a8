"""Reloading settings, ``cli.exec`` and stopping background processes
(docs/reference/tui-gateway.md#slash-commands-and-the-cli)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_tui_gateway import cli_exec
from hermes_tui_gateway.params import GatewayError, session_id

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params


async def reload_mcp(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``reload.mcp``: re-read ``[mcp_servers]``, reconnect them, answer each one's state and tools.

    Without the ``mcp`` plugin there are no servers (``servers: []``).
    """
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


async def reload_env(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``reload.env``: re-read ``.env`` through the CLI's loader; report how many keys changed."""
    if gw.reload_settings is None:
        return {"updated": 0}
    before = _leaves(gw.kernel.settings.model_dump(mode="json"))
    try:
        await gw.reload_settings()
    except Exception as exc:
        raise GatewayError(5015, f"reload.env failed: {type(exc).__name__}") from exc
    after = _leaves(gw.kernel.settings.model_dump(mode="json"))
    return {"updated": sum(1 for k, v in after.items() if before.get(k) != v)}


async def process_stop(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``process.stop``: end the terminal tool's background processes (3 s grace)."""
    sid = session_id(p)
    lives = [gw.lives[sid]] if sid in gw.lives else ([] if sid else list(gw.lives.values()))
    try:
        killed = sum([await live.session.stop_processes(grace=3.0) for live in lives])
    except Exception as exc:
        raise GatewayError(5010, f"process.stop failed: {type(exc).__name__}") from exc
    return {"killed": killed}


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
        }
    )
