"""Session lifecycle methods (docs/reference/tui-gateway.md#session-lifecycle): create, resume, list,
activate, close, …"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import SeedMessage, rpc
from hermes_tui_gateway import encode, tenancy
from hermes_tui_gateway import wire_params as wp
from hermes_tui_gateway import wire_results as wr
from hermes_tui_gateway.params import GatewayError, clamp, workspace

if TYPE_CHECKING:
    from hermes_core import Session
    from hermes_tui_gateway.gateway import Conn, Gateway, Live, Params, Result

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_title(title: str, code_empty: int = 4021) -> str:
    """Validate a title: non-empty, at most 200 characters, no control characters."""
    stripped = title.strip()
    if not stripped:
        raise GatewayError(code_empty, "title required")
    if len(stripped) > 200 or _CONTROL.search(stripped):
        raise GatewayError(4022, "invalid title (at most 200 characters, no control characters)")
    return stripped


async def snapshot(gw: Gateway, live: Live, omit_messages: bool = False) -> wr.Snapshot:
    """Return the docs/reference/tui-gateway.md#snapshot snapshot of a live session."""
    session = live.session
    info = live.stream.info_payload()
    rows = await session.history()
    messages = [] if omit_messages else [encode.row_obj(r) for r in rows]
    open_requests = gw.open_requests(live)
    out: wr.Snapshot = {
        "session_id": session.id,
        "stored_session_id": session.id,
        "session_key": session.id,
        "message_count": len(rows),
        "messages": messages,
        "info": info,
        "running": info["running"],
        "status": info["status"],
        "started_at": float(session.info().created_at),
        "open_requests": open_requests,
        "queued": info["queued"],
    }
    for kind in ("approval", "clarify"):
        oldest = next((r for r in open_requests if r["type"] == f"{kind}.request"), None)
        if oldest is not None:
            out["pending_approval" if kind == "approval" else "pending_clarify"] = oldest.get("payload")
    if omit_messages:
        out["messages_omitted"] = True
    return out


def _seed(raw: list[wp.SeedMessageParam]) -> list[SeedMessage]:
    out: list[SeedMessage] = []
    for item in raw:
        text = item.content if item.content is not None else item.text
        out.append(SeedMessage(item.role, text or ""))
    return out


def _after_info(gw: Gateway, live: Live) -> None:
    """Emit ``session.info`` right after the response (the agent is built), then ``error`` if
    the session's provider cannot be called (no API key), so the host can say so before a turn."""

    def emit() -> None:
        if gw.lives.get(live.session.id) is not live:
            return
        live.stream.emit_info(force=True)
        problem = _provider_problem(gw, live.session)
        if problem is not None:
            live.stream.emit("error", {"message": problem, "code": "provider_auth"})

    rpc.after_response(emit)


def _provider_problem(gw: Gateway, session: Session) -> str | None:
    """Return why the session's provider cannot be called (a missing key), or ``None``."""
    provider = session.info().provider
    hub = gw.kernel.providers
    if not provider or not hub.has(provider):
        return None  # an unknown provider is reported by the turn that tries it
    return hub.missing_key_hint(provider)


async def create(gw: Gateway, conn: Conn, p: Params) -> wr.Snapshot:
    """``session.create``."""
    q = wp.parse(wp.SessionCreateParams, p)
    cols, cwd_raw, title, model = q.cols, q.cwd, q.title, q.model
    provider, effort, parent = q.provider, q.reasoning_effort, q.parent_session_id
    close_on_disconnect = q.close_on_disconnect
    seed = _seed(q.messages)
    if title is not None:
        title = check_title(title, 4022)
    if effort is not None and effort not in ("none", "minimal", "low", "medium", "high", "xhigh"):
        raise GatewayError(4002, f"invalid reasoning_effort: {effort}", {"key": "reasoning_effort"})
    cwd = workspace(cwd_raw or str(Path.cwd()), cwd_raw)
    kernel = gw.kernel
    if parent is not None and parent not in gw.lives and not await _stored_and_seen(gw, parent):
        raise GatewayError(4007, f"parent session not found: {parent}")
    if provider and model and ":" not in model:
        model = f"{provider}:{model}"
    elif provider and not model:
        if not kernel.providers.has(provider):
            raise GatewayError(4002, f"unknown provider: {provider}", {"candidates": []})
    session = await kernel.open_session(
        source="tui",
        owner="tui",
        cwd=cwd,
        profile=gw.settings.approval_profile,
        model=model,
        title=title,
        seed=seed,
        parent_session_id=parent,
    )
    await gw.claim(session)
    if effort is not None:
        await session.set_reasoning_effort(effort)
    live = gw.adopt(session, conn)
    live.cols = clamp(cols or 80, 20, 1000)
    live.close_on_disconnect = close_on_disconnect and conn.kind == "ws"
    _after_info(gw, live)
    return await snapshot(gw, live)


async def _stored_and_seen(gw: Gateway, sid: str) -> bool:
    """Tell whether ``sid`` is a stored session the current connection may see."""
    return await gw.kernel.sessions.exists(sid) and await gw.sees(sid)


async def start_new(gw: Gateway, conn: Conn, previous: Live) -> Live:
    """Open the fresh session ``/new`` asks for, bound to the caller
    (docs/reference/tui-gateway.md#slash-commands-and-the-cli).

    It is created as ``session.create`` creates one, lazily (nothing stored before its first
    turn), and takes over what the user chose for the previous one: the workspace, the approval
    profile, a model switched on that session, and the TUI's busy and tool-detail settings. The
    previous session stays live and unchanged, so a turn it runs finishes and it can be resumed.

    :param gw: the gateway.
    :param conn: the connection that sent ``/new``; the new session's events go to it.
    :param previous: the session ``/new`` was typed in.
    :returns: the new live session; its ``session.info`` follows the response.
    """
    old = previous.session
    info = old.info()
    # Only a model chosen for that session carries over; a configured default stays a default.
    model = info.model if info.model_source == "session" else None
    session = await gw.kernel.open_session(
        source="tui", owner="tui", cwd=Path(info.cwd), profile=old.profile, model=model
    )
    await gw.claim(session)
    for key in ("tui.busy_policy", "tui.verbose"):
        if key in old.extra:
            session.extra[key] = old.extra[key]
    live = gw.adopt(session, conn)
    live.cols = previous.cols
    _after_info(gw, live)
    return live


async def load(gw: Gateway, conn: Conn, target: str, not_found: int) -> Live:
    """Open a stored session here (its log picks up where it ended, closing a turn a crash cut
    off) and adopt it; ``not_found`` is the code for an unknown id."""
    from hermes_core import DEFAULT_TENANT, SessionNotFound

    try:
        if tenancy.tenant() is not None and gw.tenants is not None:
            # Resolve the id (or title) first: another tenant's session is never opened here.
            record = await gw.kernel.sessions.lookup(target)
            if record is None or not await gw.sees(record.id):
                raise SessionNotFound(target)
            target = record.id
        session = await gw.kernel.sessions.resume(target, owner="tui")
        tenant = await gw.tenants.tenant(session.id) if gw.tenants is not None else DEFAULT_TENANT
    except SessionNotFound:
        data: dict[str, Any] = {"session_id": target}
        if not_found == 4001:
            data["resumable"] = False  # as for any other method on a session not live here
        raise GatewayError(not_found, "session not found", data) from None
    except (GatewayError, rpc.RpcError):
        raise
    except Exception as exc:
        from hermes_core import SessionBusy, SessionInUse

        if isinstance(exc, SessionInUse | SessionBusy):
            raise
        raise GatewayError(5000, f"resume failed: {type(exc).__name__}") from exc
    live = gw.lives.all.get(session.id) or gw.adopt(session, conn, tenant)
    _after_info(gw, live)
    return live


async def resume(gw: Gateway, conn: Conn, p: Params) -> wr.ResumeResult:
    """``session.resume``: reuse a live id, else load it (id first, then exact title)."""
    if p.get("session_id") in (None, ""):
        raise GatewayError(4006, "session_id required")
    q = wp.parse(wp.SessionResumeParams, p)
    target, cols, omit, close_on_disconnect = q.session_id, q.cols, q.omit_messages, q.close_on_disconnect
    live = gw.lives.get(target) or await load(gw, conn, target, 4007)
    gw.bind(live, conn)
    if cols is not None:
        live.cols = clamp(cols, 20, 1000)
    if close_on_disconnect and conn.kind == "ws":
        live.close_on_disconnect = True
    return {**await snapshot(gw, live, omit), "resumed": live.session.id}


async def list_sessions(gw: Gateway, conn: Conn, p: Params) -> wr.SessionListResult:
    """``session.list``: stored sessions, most recently active first."""
    q = wp.parse(wp.SessionListParams, p)
    limit = clamp(q.limit or 200, 1, 1000)
    title, cwd_raw = q.title, q.cwd
    cwd = str(workspace(cwd_raw, cwd_raw)) if cwd_raw else None
    try:
        page = await tenancy.listing(gw.kernel, gw.tenants, limit, title=title, cwd=cwd)
    except Exception as exc:
        raise GatewayError(5006, f"session.list failed: {type(exc).__name__}") from exc
    out: list[wr.SessionListItem] = []
    for s in page.sessions:
        if getattr(s, "source", None) == "tool":
            continue
        out.append(
            {
                "id": s.id,
                "title": s.title,
                "preview": s.preview,
                "started_at": float(s.created_at),
                "last_active": float(s.updated_at or s.created_at),
                "message_count": getattr(s, "message_count", 0) or 0,
                "source": s.source,
                "cwd": s.cwd,
            }
        )
    return {"sessions": out}


async def activate(gw: Gateway, conn: Conn, p: Params) -> wr.Snapshot:
    """``session.activate``: rebind a live session to the caller."""
    q = wp.parse(wp.SnapshotParams, p)
    live = await gw.live_checked(q.session_id)
    gw.bind(live, conn)
    return await snapshot(gw, live, q.omit_messages)


async def close(gw: Gateway, conn: Conn, p: Params) -> wr.CloseResult:
    """``session.close``: never errors; ``closed:false`` when not live (or not named)."""
    try:
        q = wp.parse(wp.SessionParams, p)
    except rpc.RpcError:
        return {"closed": False}
    if "session_id" not in q.model_fields_set or q.session_id not in gw.lives:
        return {"closed": False}
    return {"closed": await gw.close_session(q.session_id)}


async def history(gw: Gateway, conn: Conn, p: Params) -> wr.HistoryResult:
    """``session.history``: the durable projection (archived rows on request)."""
    q = wp.parse(wp.SessionHistoryParams, p)
    live = await gw.live_checked(q.session_id)
    archived = q.include_archived
    rows = await live.session.history(include_archived=archived)
    return {"count": len(rows), "messages": [encode.row_obj(r, archived) for r in rows]}


async def branch(gw: Gateway, conn: Conn, p: Params) -> wr.BranchResult:
    """``session.branch``: a new persisted session with this one as parent."""
    q = wp.parse(wp.SessionBranchParams, p)
    live = await gw.live_checked(q.session_id)
    name, count, up_to = q.name, q.count, q.up_to_row_id
    if count is not None and up_to is not None:
        raise GatewayError(4002, "count and up_to_row_id are exclusive")
    if count is not None and count < 1:
        raise GatewayError(4002, "count must be at least 1")
    if name is not None and name.strip():
        name = check_title(name, 4022)
    else:
        name = None  # the Ink TUI sends name "" for a plain /branch
    source = live.session
    visible = await source.history()
    if not visible:
        raise GatewayError(4008, "nothing to branch — send a message first")
    if up_to is not None and not any(r.id == up_to for r in source.rows):
        raise GatewayError(4018, f"up_to_row_id not found: {up_to}")
    try:
        child = await source.branch(owner="tui", count=count, up_to_row_id=up_to, title=name)
    except rpc.RpcError:
        raise
    except Exception as exc:
        from hermes_core import InvalidValue, SessionInUse

        if isinstance(exc, SessionInUse | InvalidValue):
            raise
        raise GatewayError(5008, f"branch failed: {type(exc).__name__}") from exc
    return await adopt_branch(gw, conn, child, source.id)


async def adopt_branch(gw: Gateway, conn: Conn, child: Session, parent_id: str) -> wr.BranchResult:
    """Bind a session the core just branched to the caller; return its snapshot.

    Used by ``session.branch`` and by ``/branch`` through ``command.dispatch``, so both leave
    the gateway serving the new session the same way.

    :param gw: the gateway.
    :param conn: the caller, to which the new session is bound.
    :param child: the branched session, open in this kernel.
    :param parent_id: the session it was branched from.
    :returns: the snapshot plus ``title`` and ``parent``.
    """
    await gw.claim(child)
    new = gw.adopt(child, conn)
    gw.known_stored.add(child.id)
    _after_info(gw, new)
    return {**await snapshot(gw, new), "title": child.info().title, "parent": parent_id}


async def title(gw: Gateway, conn: Conn, p: Params) -> wr.TitleResult:
    """``session.title``: read, or set (pending until the first turn)."""
    q = wp.parse(wp.SessionTitleParams, p)
    live = await gw.live_checked(q.session_id)
    raw = q.title
    if raw is None:
        return {"title": live.session.info().title or "", "session_key": live.session.id}
    cleaned = check_title(raw)
    try:
        result = await live.session.set_title(cleaned)
    except Exception as exc:
        raise GatewayError(5007, f"title persistence failed: {type(exc).__name__}") from exc
    live.stream.emit_info(force=True)
    return {"title": result.title, "pending": result.pending}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        async def call(conn: Conn, p: Params) -> Result:
            result: Result = await fn(gw, conn, p)
            return result

        return call

    gw.slow.update(
        {
            "session.create": bind(create),
            "session.resume": bind(resume),
            "session.list": bind(list_sessions),
            "session.activate": bind(activate),
            "session.close": bind(close),
            "session.history": bind(history),
            "session.branch": bind(branch),
            "session.title": bind(title),
        }
    )
