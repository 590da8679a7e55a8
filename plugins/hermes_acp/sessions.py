"""Session methods (docs/reference/acp.md#authentication, #sessions, #modes-config-options-and-models):
authenticate, new, load, resume, list, close, fork, settings."""

from __future__ import annotations

import base64
import binascii
import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hermes_acp import params as P
from hermes_acp.errors import NO_MODEL, auth_required, invalid, not_found
from hermes_acp.options import session_options
from hermes_acp.state import AcpSession
from hermes_acp.static import AUTH_METHOD_IDS
from hermes_core.rpc import after_response

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_core import Session

log = logging.getLogger("hermes_acp")
OWNER = "acp"


def _require_auth(conn: AcpConnection) -> None:
    """Refuse sessions while no model is configured or its provider lacks its key.

    ACP runs without the offline echo fallback (``TransportSpec.core``): an editor user getting
    echo replies would think Hermes is broken, so the editor is asked to run the setup instead.
    """
    status = conn.kernel.model_status()
    if status.model is None:
        raise auth_required(NO_MODEL)
    if status.problem is not None:
        raise auth_required(status.problem)


async def _attach_mcp(
    conn: AcpConnection, core: Session, servers: list[dict[str, Any]] | None, *, new: bool
) -> None:
    """Start the editor's MCP servers for this session (docs/mcp.md#servers-an-editor-passes-acp).

    A malformed entry is ``-32602`` (a session opened by this request is closed again); without
    the ``mcp`` plugin the servers are not started and the log says why.
    """
    if not servers:
        return
    from hermes_core import ConfigError, InvalidValue

    try:
        await conn.kernel.tool_sources.attach("mcp", core.id, servers)
    except InvalidValue:
        if new:
            await core.close()
        raise
    except ConfigError as exc:
        names = ", ".join(str(s.get("name", "?")) for s in servers)
        log.warning("the editor's MCP servers (%s) were not started: %s", names, exc)


async def authenticate(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Re-read the configuration; succeed once the default model's provider has its key
    (docs/reference/acp.md#authentication).

    :param conn: the connection.
    :param params: ``{methodId}``.
    :returns: ``{}``.
    """
    args = P.parse(P.AuthenticateParams, params)
    if args.methodId not in AUTH_METHOD_IDS:
        raise invalid("methodId", f"unknown authentication method {args.methodId!r}")
    if conn.ctx.reload_settings is not None:
        try:
            await conn.ctx.reload_settings()
        except Exception as exc:
            log.warning("re-reading the configuration failed: %s", exc)
    _require_auth(conn)
    return {}


def available_commands(conn: AcpConnection) -> list[dict[str, Any]]:
    """Return the slash commands offered over ACP (docs/reference/acp.md#slash-commands).

    :param conn: the connection.
    :returns: ``AvailableCommand`` objects.
    """
    out: list[dict[str, Any]] = []
    for spec in conn.kernel.registry.commands.values():
        if spec.needs_terminal_ui or "acp" in spec.unavailable_on:
            continue
        entry: dict[str, Any] = {"name": spec.name, "description": spec.summary}
        usage = spec.usage or ""
        hint = usage.split(None, 1)[1] if len(usage.split(None, 1)) > 1 else ""
        if hint:
            entry["input"] = {"hint": hint}
        out.append(entry)
    return out


def _announce(conn: AcpConnection, acp_session: AcpSession, window: int | None) -> None:
    """After a session response: the command list, then usage when the window is known; and
    the model list of a user-defined endpoint is fetched in the background."""
    from hermes_acp.config_methods import probe_custom_models

    session_id = acp_session.id

    def hook() -> None:
        conn.update(
            session_id,
            {"sessionUpdate": "available_commands_update", "availableCommands": available_commands(conn)},
        )
        usage = acp_session.core.usage
        size = usage.context_max or window
        if size:
            used = min(int(usage.context_used or 0), int(size))
            conn.update(session_id, {"sessionUpdate": "usage_update", "used": used, "size": int(size)})
        conn.background(probe_custom_models(conn, acp_session), f"hermes-acp-models-{session_id}")

    after_response(hook)


def _register(conn: AcpConnection, core: Session) -> AcpSession:
    existing = conn.sessions.get(core.id)
    if existing is not None and not existing.closed and existing.core is core:
        return existing
    acp_session = AcpSession(core)
    conn.sessions[core.id] = acp_session
    conn.watch(acp_session)
    from hermes_acp.fs import install_file_access

    install_file_access(conn, acp_session)
    return acp_session


async def new_session(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Create a session in ``acp.default_mode`` (docs/reference/acp.md#sessionnew).

    :param conn: the connection.
    :param params: ``{cwd, mcpServers, additionalDirectories?}``.
    :returns: ``{sessionId, modes, configOptions, models}``.
    """
    args = P.parse(P.NewSessionParams, params)
    cwd = P.check_cwd(args.cwd)
    P.check_directories(args.additionalDirectories)
    _require_auth(conn)
    core = await conn.kernel.open_session(
        source="acp", owner=OWNER, cwd=cwd, profile=conn.settings.default_mode
    )
    await _attach_mcp(conn, core, args.mcpServers, new=True)
    acp_session = _register(conn, core)
    options, window = await session_options(conn.kernel, core)
    result = {"sessionId": core.id, **options}
    _announce(conn, acp_session, window)
    return result


async def _open_stored(conn: AcpConnection, session_id: str) -> Session:
    """Open a stored (or live) session by id, or raise ``-32002``."""
    kernel = conn.kernel
    live = kernel.live_session(session_id)
    if live is not None and live.lineage is None:
        return live  # a running delegated child goes on to open_session, which refuses it
    try:
        record = await kernel.sessions.find(session_id)
    except Exception:
        record = None
    if record is None:
        raise not_found(session_id)
    return await kernel.open_session(session_id, source=record.source, owner=OWNER)


async def _reopen(conn: AcpConnection, session_id: str, cwd_text: str) -> AcpSession:
    cwd = P.check_cwd(cwd_text)
    _require_auth(conn)
    live = conn.sessions.get(session_id)
    if live is not None and not live.closed and (live.core.busy or live.tickets):
        raise invalid("sessionId", "a turn is running in this session", reason="busy")
    core = await _open_stored(conn, session_id)
    if core.busy:
        raise invalid("sessionId", "a turn is running in this session", reason="busy")
    if str(core.cwd) != str(cwd):
        await core.set_cwd(cwd)
    return _register(conn, core)


async def load_session(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Replay the whole active transcript, then answer (docs/reference/acp.md#sessionload).

    :param conn: the connection.
    :param params: ``{sessionId, cwd, mcpServers}``.
    :returns: ``{modes, configOptions, models}``.
    """
    from hermes_acp.replay import replay
    from hermes_acp.subagent_calls import stored_descendants

    args = P.parse(P.LoadSessionParams, params)
    P.check_directories(args.additionalDirectories)
    acp_session = await _reopen(conn, args.sessionId, args.cwd)
    await _attach_mcp(conn, acp_session.core, args.mcpServers, new=False)
    loop_future = acp_session.gate
    if loop_future is None or loop_future.done():
        import asyncio

        acp_session.gate = asyncio.get_running_loop().create_future()
    gate = acp_session.gate
    try:
        rows = await acp_session.core.history(replay=True)
        nested = await stored_descendants(conn.kernel, rows)
        replay(conn, acp_session, rows, nested)
        result, window = await session_options(conn.kernel, acp_session.core)
    except BaseException:
        if gate is not None and not gate.done():
            gate.set_result(None)
        raise

    def open_gate() -> None:
        if gate is not None and not gate.done():
            gate.set_result(None)

    after_response(open_gate)
    _announce(conn, acp_session, window)
    return result


async def resume_session(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Reopen a session without replay (docs/reference/acp.md#sessionresume).

    :param conn: the connection.
    :param params: ``{sessionId, cwd, mcpServers?}``.
    :returns: ``{modes, configOptions, models}``.
    """
    args = P.parse(P.ResumeSessionParams, params)
    P.check_directories(args.additionalDirectories)
    acp_session = await _reopen(conn, args.sessionId, args.cwd)
    await _attach_mcp(conn, acp_session.core, args.mcpServers, new=False)
    result, window = await session_options(conn.kernel, acp_session.core)
    _announce(conn, acp_session, window)
    return result


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _encode_cursor(cursor: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"k": cursor}).encode()).decode().rstrip("=")


def _decode_cursor(text: str) -> str:
    try:
        padded = text + "=" * (-len(text) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        cursor = data["k"]
        if not isinstance(cursor, str):
            raise ValueError
        return cursor
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError):
        raise invalid("cursor", "cursor is not valid") from None


async def list_sessions(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """List stored sessions, newest activity first, in keyset pages (docs/reference/acp.md#sessionlist).

    :param conn: the connection.
    :param params: ``{cwd?, cursor?}``.
    :returns: ``{sessions, nextCursor?}``.
    """
    args = P.parse(P.ListSessionsParams, params)
    cwd = None
    if args.cwd is not None:
        import os

        if "\x00" in args.cwd:
            raise invalid("cwd", "cwd is not a valid path: it contains a NUL character")
        if not os.path.isabs(args.cwd):
            raise invalid("cwd", "cwd must be an absolute path")
        from pathlib import Path

        cwd = str(Path(args.cwd).resolve())
    cursor = _decode_cursor(args.cursor) if args.cursor else None
    try:
        page = await conn.kernel.sessions.list(limit=conn.settings.list_page_size, cursor=cursor, cwd=cwd)
    except Exception as exc:
        from hermes_core import InvalidValue

        if isinstance(exc, (InvalidValue, ValueError)):
            raise invalid("cursor", "cursor is not valid") from None
        raise
    sessions: list[dict[str, Any]] = []
    for record in page.sessions:
        if not record.cwd:
            continue
        entry: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd}
        if record.title:
            entry["title"] = record.title
        if record.updated_at:
            entry["updatedAt"] = _iso(record.updated_at)
        sessions.append(entry)
    result: dict[str, Any] = {"sessions": sessions}
    if page.next_cursor:
        result["nextCursor"] = _encode_cursor(page.next_cursor)
    return result


async def close_session(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Cancel any turn, answer queued prompts ``cancelled``, then free the session
    (docs/reference/acp.md#sessionclose).

    :param conn: the connection.
    :param params: ``{sessionId}``.
    :returns: ``{}``.
    """
    from hermes_acp.prompting import interrupt_session

    args = P.parse(P.SessionParams, params)
    acp_session = conn.session(args.sessionId)
    waiting = list(acp_session.tickets)
    await interrupt_session(conn, acp_session)
    for ticket in waiting:
        # Each prompt answers before the close response (docs/reference/acp.md#sessionclose).
        await ticket.responded
    acp_session.closed = True
    await acp_session.core.close()
    if conn.sessions.get(acp_session.id) is acp_session:
        del conn.sessions[acp_session.id]
    return {}


async def fork_session(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Branch a session into a new one holding a copy of its history (docs/reference/acp.md#sessionfork).

    :param conn: the connection.
    :param params: ``{sessionId, cwd, mcpServers?, additionalDirectories?}``.
    :returns: ``{sessionId, modes, configOptions, models}``.
    """
    args = P.parse(P.ResumeSessionParams, params)
    cwd = P.check_cwd(args.cwd)
    P.check_directories(args.additionalDirectories)
    _require_auth(conn)
    was_live = conn.kernel.live_session(args.sessionId) is not None
    source = await _open_stored(conn, args.sessionId)
    try:
        child = await source.branch(owner=OWNER, cwd=cwd)
    finally:
        if not was_live:
            await source.close()
    await _attach_mcp(conn, child, args.mcpServers, new=True)
    acp_session = _register(conn, child)
    options, window = await session_options(conn.kernel, child)
    result = {"sessionId": child.id, **options}
    _announce(conn, acp_session, window)
    return result
