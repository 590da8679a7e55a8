"""Subagent methods (docs/reference/tui-gateway.md#subagents): the delegated children of a session,
read from and acted on through the kernel's ``sessions.children`` table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import ConfigError
from hermes_tui_gateway import tenancy
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.params import GatewayError, bad, clamp

if TYPE_CHECKING:
    from hermes_core import Subagent
    from hermes_tui_gateway.gateway import Conn, Gateway, Params

TAIL_DEFAULT = 4000


def _subagent_id(q: wp.SubagentParams) -> str:
    sub = q.subagent_id
    if not isinstance(sub, str) or not sub:
        raise GatewayError(4000, "subagent_id required")
    return sub


def _find(gw: Gateway, q: wp.SubagentParams) -> Subagent | None:
    """The child named by ``subagent_id``; with ``session_id``, only one of that session's tree."""
    sub_id = _subagent_id(q)
    table = gw.kernel.sessions.children
    sub = table.get(sub_id)
    sid = q.session_id
    if sub is not None and sid and table.root_id(sub_id) != sid:
        return None
    if sub is not None and not _shown(gw, sub_id):
        return None
    return sub


def _shown(gw: Gateway, sub_id: str) -> bool:
    """Whether a child hangs from a session the current connection sees (another tenant's child
    is answered as unknown)."""
    if tenancy.tenant() is None:
        return True
    root = gw.kernel.sessions.children.root_id(sub_id)
    return root is not None and root in gw.lives


def _limits(gw: Gateway) -> dict[str, int]:
    try:
        return gw.kernel.sessions.children.limits.as_dict()
    except ConfigError as exc:
        raise GatewayError(5000, str(exc)) from exc


def delegation_status(gw: Gateway, conn: Conn, p: Params) -> wr.DelegationStatus:
    """``delegation.status``: running children (of one session's tree, or all), pause, limits."""
    table = gw.kernel.sessions.children
    sid = wp.parse(wp.SessionParams, p).session_id
    if sid:
        gw.live(sid)
        active = table.children(sid, active_only=True, recursive=True)
    else:
        active = [s for s in table.active() if _shown(gw, s.subagent_id)]
    limits = _limits(gw)
    return {
        "active": [s.snapshot() for s in active],
        "paused": table.is_paused(sid) if sid else gw.delegation_paused,
        "max_concurrent_children": limits["max_concurrent_children"],
        "max_spawn_depth": limits["max_spawn_depth"],
        "max_background_children": limits["max_background_children"],
        "max_child_tool_rounds": limits["max_child_tool_rounds"],
    }


def delegation_pause(gw: Gateway, conn: Conn, p: Params) -> wr.DelegationPauseResult:
    """``delegation.pause``: refuse (or allow again) new children of a session; without
    ``session_id`` (the Ink TUI's ``/agents pause``), of every session live in this gateway now
    and of those opened later, until resumed the same way."""
    if "paused" in p and p["paused"] is None:
        raise bad("paused", "boolean")  # an explicit null is no answer here
    q = wp.parse(wp.DelegationPauseParams, p)
    paused = q.paused
    table = gw.kernel.sessions.children
    sid = q.session_id
    if sid:
        gw.live(sid)
        table.set_paused(sid, paused)
        return {"session_id": sid, "paused": paused}
    gw.delegation_paused = paused
    for live_sid in list(gw.lives):
        table.set_paused(live_sid, paused)
    return {"session_id": None, "paused": paused}


def subagent_list(gw: Gateway, conn: Conn, p: Params) -> wr.SubagentListResult:
    """``subagent.list``: a session's whole tree, oldest first (running and recently finished)."""
    q = wp.parse(wp.SubagentListParams, p)
    sid = q.session_id
    gw.live(sid)
    active_only = q.active_only
    subs = gw.kernel.sessions.children.children(sid, active_only=active_only, recursive=True)
    return {"subagents": [s.snapshot() for s in subs]}


def subagent_interrupt(gw: Gateway, conn: Conn, p: Params) -> wr.SubagentInterruptResult:
    """``subagent.interrupt``: stop one running child (its own children stop with it)."""
    q = wp.parse(wp.SubagentParams, p)
    sub = _find(gw, q)
    if sub is None or not sub.active:
        return {"found": False, "subagent_id": _subagent_id(q)}
    gw.kernel.spawn(gw.kernel.sessions.children.interrupt(sub.subagent_id))
    return {"found": True, "subagent_id": sub.subagent_id}


def subagent_steer(gw: Gateway, conn: Conn, p: Params) -> wr.SubagentSteerResult:
    """``subagent.steer``: queue guidance for the child's next tool boundary, or say why not."""
    q = wp.parse(wp.SubagentSteerParams, p)
    sub_id = _subagent_id(q)
    text = q.text
    if not isinstance(text, str) or not text.strip():
        raise GatewayError(4002, "text is required")
    gw.live(q.session_id)
    sub = _find(gw, q)
    if sub is None:
        return {"status": "rejected", "reason": "not_found", "subagent_id": sub_id, "text": text}
    status, reason = gw.kernel.sessions.children.steer(sub_id, text)
    out: wr.SubagentSteerResult = {"status": status, "subagent_id": sub_id, "text": text}
    if reason is not None:
        out["reason"] = reason
    return out


def subagent_tail(gw: Gateway, conn: Conn, p: Params) -> wr.SubagentTailResult:
    """``subagent.tail``: the last characters a child wrote, with its state."""
    q = wp.parse(wp.SubagentTailParams, p)
    sub = _find(gw, q)
    if sub is None:
        raise GatewayError(4004, "subagent not found", {"subagent_id": _subagent_id(q)})
    chars = clamp(q.chars or TAIL_DEFAULT, 1, 16384)
    return {
        "subagent_id": sub.subagent_id,
        "status": sub.status,
        "text": gw.kernel.redactor(sub.tail[-chars:]),
        "summary": sub.summary,
        "error": sub.error,
    }


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.fast.update(
        {
            "delegation.status": bind(delegation_status),
            "delegation.pause": bind(delegation_pause),
            "subagent.list": bind(subagent_list),
            "subagent.interrupt": bind(subagent_interrupt),
            "subagent.steer": bind(subagent_steer),
            "subagent.tail": bind(subagent_tail),
        }
    )
