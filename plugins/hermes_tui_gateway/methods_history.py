"""Transcript conveniences a terminal UI asks for (docs/reference/tui-gateway.md#session-lifecycle):
``session.most_recent``, ``session.undo``, ``session.save`` and ``session.delete``."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui_gateway import encode, tenancy
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.params import GatewayError

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params

log = logging.getLogger("hermes.tui")
#: Sources that are not conversations a person had (delegated children).
HIDDEN_SOURCES = ("tool",)


async def most_recent(gw: Gateway, conn: Conn, p: Params) -> wr.MostRecentResult:
    """``session.most_recent``: the stored session active last, or ``{session_id: null}``.

    A storage failure is logged and answered as "none", like an empty store: the caller only
    wants a session to offer.
    """
    wp.parse(wp.NoParams, p)
    try:
        page = await tenancy.listing(gw.kernel, gw.tenants, 200)
    except Exception:
        log.warning("tui: session.most_recent could not list sessions", exc_info=True)
        return {"session_id": None}
    for s in page.sessions:
        if s.source in HIDDEN_SOURCES:
            continue
        started = float(s.created_at)
        return {"session_id": s.id, "title": s.title or "", "started_at": started, "source": s.source}
    return {"session_id": None}


async def undo(gw: Gateway, conn: Conn, p: Params) -> wr.UndoResult:
    """``session.undo``: archive the last user turn and what followed; ``{removed}`` rows.

    Nothing to undo is ``removed: 0``; a running turn is 4009 (interrupt first).
    """
    from hermes_core import RewindError

    live = await gw.live_checked(wp.parse(wp.SessionParams, p).session_id)
    try:
        result = await live.session.undo()
    except RewindError as exc:
        if exc.code == 4018:
            return {"removed": 0}
        raise
    live.stream.emit_info(force=True)
    return {"removed": result.archived}


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")


async def save(gw: Gateway, conn: Conn, p: Params) -> wr.SaveResult:
    """``session.save``: write the transcript to ``<data dir>/sessions/saved/`` as JSON; ``{file}``."""
    live = await gw.live_checked(wp.parse(wp.SessionParams, p).session_id)
    session = live.session
    info = session.info()
    rows = await session.history()
    stamp = time.strftime("%Y%m%d_%H%M%S")
    path = gw.data_dir / "sessions" / "saved" / f"hermes_conversation_{stamp}.json"
    document = {
        "session_id": session.id,
        "title": info.title,
        "model": info.model,
        "cwd": info.cwd,
        "started_at": float(info.created_at),
        "messages": [encode.row_obj(r) for r in rows],
    }
    try:
        await gw.run_blocking(_write, path, document)
    except OSError as exc:
        raise GatewayError(5011, f"could not save the transcript: {exc.strerror or exc}") from exc
    return {"file": str(path)}


async def delete(gw: Gateway, conn: Conn, p: Params) -> wr.NeverAnswered:
    """``session.delete``: refused; stored sessions are kept (rows are never deleted here).

    The checks come first so the answer says the right thing: 4006 without an id, 4023 for a
    session live in this gateway, 4007 for an unknown one, else 5036.
    """
    sid = wp.parse(wp.DeleteParams, p).session_id
    if not sid:
        raise GatewayError(4006, "session_id required")
    if sid in gw.lives:
        raise GatewayError(4023, "cannot delete an active session")
    if not await gw.kernel.sessions.exists(sid) or not await gw.sees(sid):
        raise GatewayError(4007, "session not found", {"session_id": sid})
    raise GatewayError(
        5036, "stored sessions are kept: this gateway does not delete them", {"session_id": sid}
    )


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.slow.update(
        {
            "session.most_recent": bind(most_recent),
            "session.undo": bind(undo),
            "session.save": bind(save),
            "session.delete": bind(delete),
        }
    )
