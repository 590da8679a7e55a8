"""Fast reads of live-session state (docs/reference/tui-gateway.md#session-lifecycle): status, usage, active
list, replay, resize."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from hermes_core import rpc
from hermes_tui_gateway import encode
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.params import clamp
from hermes_tui_gateway.wire import EventParams, UsageObj

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params


def active_list(gw: Gateway, conn: Conn, p: Params) -> wr.ActiveListResult:
    """``session.active_list`` (fast path): sessions live in this process."""
    current = wp.parse(wp.ActiveListParams, p).current_session_id
    out: list[wr.ActiveSession] = []
    for sid, live in sorted(gw.lives.items(), key=lambda kv: kv[1].created):
        info = live.session.info()
        rows = live.session.rows
        users = [r for r in rows if encode.is_user_turn(r)]
        out.append(
            {
                "id": sid,
                "session_key": sid,
                "current": sid == current,
                "title": info.title,
                "preview": (users[0].content[:80] if users else ""),
                "model": info.model or "",
                "message_count": len(rows),
                "started_at": float(info.created_at),
                "last_active": float(rows[-1].created_at) if rows else float(info.created_at),
                "status": info.status,
            }
        )
    return {"sessions": out}


def usage(gw: Gateway, conn: Conn, p: Params) -> UsageObj:
    """``session.usage``: the cumulative usage object."""
    live = gw.live(wp.parse(wp.SessionParams, p).session_id)
    return encode.usage_obj(live.session.usage, live.session.info().model)


def status(gw: Gateway, conn: Conn, p: Params) -> wr.StatusResult:
    """``session.status`` (fast path): display text plus Pi's ``get_state`` fields."""
    live = gw.live(wp.parse(wp.SessionParams, p).session_id)
    session = live.session
    info = session.info()
    usage_obj = encode.usage_obj(info.usage, info.model)
    rows = session.rows
    text = "\n".join(
        [
            f"Session ID: {session.id}",
            f"Title: {info.title or '(untitled)'}",
            f"Model: {info.model} ({info.provider})",
            f"Tokens: {info.usage.total} (in {info.usage.input}, out {info.usage.output})",
            f"Agent Running: {'Yes' if info.busy else 'No'}",
        ]
    )
    out: wr.StatusResult = {
        "output": text,
        "session_id": session.id,
        "title": info.title,
        "model": info.model,
        "provider": info.provider,
        "status": info.status,
        "running": info.busy,
        "queued": info.queued,
        "message_count": len(encode_projection(rows)),
        "usage": usage_obj,
        "started_at": float(info.created_at),
        "last_active": float(rows[-1].created_at) if rows else float(info.created_at),
        "cwd": info.cwd,
        "open_requests": [{"type": q.kind, "request_id": q.request_id} for q in session.open_questions()],
    }
    run = getattr(session, "run", None)
    pending = list(getattr(run, "steer_buffer", []) or []) if run is not None else []
    if pending:
        out["pending_steer"] = "\n\n".join(pending)
    return out


def encode_projection(rows: list[Any]) -> list[Any]:
    """Return the rows hosts see (markers and tool-call-only assistant rows left out)."""
    return [
        r
        for r in rows
        if r.display_kind not in ("model_switch", "hidden")
        and not (r.role == "assistant" and r.tool_calls and not r.content)
    ]


async def events_since(gw: Gateway, conn: Conn, p: Params) -> wr.EventsSinceResult:
    """``session.events.since``: replay from ``last_seen`` and rebind atomically
    (docs/reference/tui-gateway.md#sequence-numbers-and-replay).

    With the event log on, the replay reads the log, so it continues across a gateway restart (a
    stored session that is not live here is opened first); without it, the in-process ring.
    """
    q = wp.parse(wp.EventsSinceParams, p)
    last_seen = q.last_seen
    sid = q.session_id
    live = gw.lives.get(sid)
    if live is None:
        if not gw.kernel.events.enabled:
            live = await gw.live_checked(sid)
        else:
            from hermes_tui_gateway.methods_session import load

            live = await load(gw, conn, sid, 4001)
    if not live.stream.logged:
        return _since_ring(gw, conn, live, last_seen)
    from hermes_core import CursorError
    from hermes_tui_gateway.replay import from_log

    stream = live.stream
    # Live frames wait (numbered) from here until this response is on the wire; the replay
    # reads the log up to the last frame let out before (stored: frames the log has yet to
    # store come live after it), so nothing is missed or repeated.
    release = stream.hold()
    upto = stream.shown_seq
    try:
        events, gaps, upto = await from_log(live, last_seen, upto)
    except CursorError as exc:
        release()
        raise rpc.RpcError(
            rpc.INVALID_PARAMS,
            str(exc),
            {"param": "last_seen", "problem": exc.problem, "head": exc.head},
        ) from None
    except BaseException:
        release()
        raise
    gw.bind(live, conn)
    rpc.after_response(release)
    return {
        "events": cast("list[EventParams]", events),
        "latest_seq": upto,
        "count": len(events),
        # History the log held and no longer has; numbers a crashed process reserved (``lost``)
        # are shown as a gap but a refetch could not give them either.
        "truncated": any(g.reason != "lost" for g in gaps),
        "epoch": gw.epoch,
        "open_requests": gw.open_requests(live),
    }


def _since_ring(gw: Gateway, conn: Conn, live: Any, last_seen: int) -> wr.EventsSinceResult:
    # No await between reading the ring and rebinding: nothing can slip in between.
    events, truncated = live.stream.since(last_seen)
    gw.bind(live, conn)
    # Live events wait until this response is on the wire, so they follow the replayed ones.
    rpc.after_response(live.stream.hold())
    return {
        "events": cast("list[EventParams]", events),
        "latest_seq": live.stream.seq,
        "count": len(events),
        "truncated": truncated,
        "epoch": gw.epoch,
        "open_requests": gw.open_requests(live),
    }


def resize(gw: Gateway, conn: Conn, p: Params) -> wr.ResizeResult:
    """``terminal.resize`` (fast path)."""
    q = wp.parse(wp.ResizeParams, p)
    live = gw.live(q.session_id)
    live.cols = clamp(q.cols, 20, 1000)
    return {"cols": live.cols}


def ping(gw: Gateway, conn: Conn, p: Params) -> wr.PingResult:
    """``gateway.ping`` (fast path)."""
    wp.parse(wp.NoParams, p)
    return {"ok": True, "ts": time.time()}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""
    gw.slow["session.events.since"] = lambda conn, p: events_since(gw, conn, p)
    gw.fast.update(
        {
            "session.active_list": lambda conn, p: active_list(gw, conn, p),
            "session.status": lambda conn, p: status(gw, conn, p),
            "session.usage": lambda conn, p: usage(gw, conn, p),
            "terminal.resize": lambda conn, p: resize(gw, conn, p),
            "gateway.ping": lambda conn, p: ping(gw, conn, p),
        }
    )
