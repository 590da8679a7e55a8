"""Subagent methods (docs/reference/tui-gateway.md#environment-and-processes): answered truthfully while no
plugin delegates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_tui_gateway.params import GatewayError, session_id

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params


def delegation_status(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``delegation.status``: no delegating tool is installed, so nothing is active."""
    return {"active": [], "paused": False, "max_spawn_depth": 0, "max_concurrent_children": 0}


def subagent_interrupt(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``subagent.interrupt``: no subagent can exist without a delegating plugin."""
    sub = p.get("subagent_id")
    if not isinstance(sub, str) or not sub:
        raise GatewayError(4000, "subagent_id required")
    return {"found": False, "subagent_id": sub}


def subagent_steer(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``subagent.steer``: the child is never running here, so the steer is rejected."""
    sub = p.get("subagent_id")
    if not isinstance(sub, str) or not sub:
        raise GatewayError(4000, "subagent_id required")
    text = p.get("text")
    if not isinstance(text, str) or not text.strip():
        raise GatewayError(4002, "text is required")
    gw.live(session_id(p))
    return {"status": "rejected", "subagent_id": sub, "text": text}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.fast.update(
        {
            "delegation.status": bind(delegation_status),
            "subagent.interrupt": bind(subagent_interrupt),
            "subagent.steer": bind(subagent_steer),
        }
    )
