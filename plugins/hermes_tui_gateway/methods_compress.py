"""``session.compress`` (docs/reference/tui-gateway.md#session-lifecycle): summarise a session's
older turns in place, with the before/after figures a host shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import rpc
from hermes_tui_gateway import encode, tenancy
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.params import GatewayError

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params


async def compress(gw: Gateway, conn: Conn, p: Params) -> wr.CompressResult:
    """``session.compress``: in place; same id, survivors keep their ids."""
    q = wp.parse(wp.CompressParams, p)
    live = await gw.live_checked(q.session_id)
    focus = q.focus_topic
    if focus is not None and len(focus) > 1000:
        raise GatewayError(4002, "focus_topic is longer than 1000 characters")
    session = live.session
    if session.busy:
        raise GatewayError(4009, "session busy", {"reason": "busy"})
    before_rows = await session.history()
    before_tokens = sum(len(r.content.split()) for r in before_rows)
    live.stream.emit("status.update", {"kind": "compressing", "text": "compressing the conversation…"})
    try:
        result = await session.compress(focus_topic=focus, charge=tenancy.charge())
    except Exception as exc:
        if isinstance(exc, rpc.RpcError):
            raise
        from hermes_core import SessionBusy

        if isinstance(exc, SessionBusy):
            raise GatewayError(4009, "session busy", {"reason": "busy"}) from exc
        live.stream.emit("status.update", {"kind": "ready", "text": "compression failed"})
        from hermes_core import BudgetExceeded, ProviderError

        if isinstance(exc, ProviderError | BudgetExceeded):
            raise gw.map_error(exc, "session.compress") from exc
        raise GatewayError(5005, f"compress failed: {type(exc).__name__}") from exc
    rows = await session.history()
    after_tokens = sum(len(r.content.split()) for r in rows)
    noop = result.summary_row_id is None
    # Count the messages the host saw disappear; the core's count also includes hidden rows
    # (tool-call-only assistant rows, markers), which would report more than there were.
    kept = {r.id for r in rows}
    removed = sum(1 for r in before_rows if r.id not in kept)
    live.stream.emit("status.update", {"kind": "ready", "text": "ready"})
    live.stream.emit_info(force=True)
    return {
        "status": "noop" if noop else "compressed",
        "removed": removed,
        "before_messages": len(before_rows),
        "after_messages": len(rows),
        "before_tokens": before_tokens,
        "after_tokens": after_tokens,
        "summary": {
            "headline": "nothing to compress" if noop else f"compressed {removed} messages into a summary",
            "token_line": f"{before_tokens} → {after_tokens} words",
            "noop": noop,
            "row_id": result.summary_row_id,
            "text": result.summary,
        },
        "usage": encode.usage_obj(session.usage, session.info().model),
        "info": live.stream.info_payload(),
        "messages": [encode.row_obj(r) for r in rows],
    }


def register(gw: Gateway) -> None:
    """Add ``session.compress`` to the gateway's tables."""

    async def call(conn: Conn, p: Params) -> wr.CompressResult:
        return await compress(gw, conn, p)

    gw.slow["session.compress"] = call
