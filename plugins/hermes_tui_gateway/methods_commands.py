"""Slash commands (docs/reference/tui-gateway.md#slash-commands-and-the-cli): catalog, resolve, dispatch and
the ``slash.exec`` alias."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, cast

from hermes_core import CommandResult, ImagePart
from hermes_tui_gateway import tenancy
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_cmds as wr
from hermes_tui_gateway.methods_session import adopt_branch, resume, snapshot, start_new
from hermes_tui_gateway.params import GatewayError, bad

if TYPE_CHECKING:
    from hermes_core import Session
    from hermes_tui_gateway.gateway import Conn, Gateway, Live, Params

SLASH_MUTATING = ("model", "compress", "branch")


def _command_name(raw: str) -> str:
    return raw.strip().lstrip("/").split()[0] if raw.strip().lstrip("/") else ""


async def catalog(gw: Gateway, conn: Conn, p: Params) -> wr.CommandCatalog:
    """``commands.catalog``: every plugin's commands and aliases."""
    wp.parse(wp.NoParams, p)
    registry = gw.kernel.registry
    pairs: list[list[str]] = []
    sub: dict[str, list[str]] = {}
    canon: dict[str, str] = {}
    cats: dict[str, list[list[str]]] = {}
    for name, spec in sorted(registry.commands.items()):
        if spec.name != name:
            continue
        pair = [f"/{name}", spec.summary]
        pairs.append(pair)
        cats.setdefault(spec.category, []).append(pair)
        if spec.subcommands:
            sub[f"/{name}"] = list(spec.subcommands)
        for alias in spec.aliases:
            canon[f"/{alias}"] = f"/{name}"
    failed = [f"{r.name}: {r.failed}" for r in registry.failures]
    return {
        "pairs": pairs,
        "sub": sub,
        "canon": canon,
        "categories": [{"name": k, "pairs": v} for k, v in sorted(cats.items())],
        "skill_count": 0,
        "warning": ("plugins failed to load: " + "; ".join(failed)) if failed else "",
    }


def resolve(gw: Gateway, conn: Conn, p: Params) -> wr.CommandResolved:
    """``command.resolve``: aliases resolve as ``command.dispatch`` resolves them."""
    name = wp.parse(wp.CommandResolveParams, p).name
    spec = gw.kernel.registry.command(_command_name(name))
    if spec is None:
        raise GatewayError(4011, "unknown command")
    return {"canonical": f"/{spec.name}", "description": spec.summary, "category": spec.category}


def _directive(result: CommandResult) -> wr.CommandDirective:
    if result.kind == "send":
        out: wr.CommandDirective = {"type": "send", "message": result.message or ""}
        if result.display is not None:
            out["display"] = dict(result.display)
        return out
    if result.kind == "prefill":
        return {"type": "prefill", "message": result.message or ""}
    if result.kind == "alias":
        return {"type": "alias", "target": result.target}
    return {"type": "exec", "output": result.output or ""}


async def dispatch(gw: Gateway, conn: Conn, p: Params) -> wr.CommandDirective:
    """``command.dispatch``: the core's ``dispatch_slash``, the same handler every surface runs."""
    q = wp.parse(wp.CommandDispatchParams, p)
    command = q.command
    if command is None:
        name = q.name
        if not isinstance(name, str):
            raise bad("command", "string")
        arg = q.arg
        command = f"/{name.lstrip('/')}" + (f" {arg}" if arg else "")
    text = command if command.lstrip().startswith("/") else f"/{command.lstrip()}"
    sid = q.session_id
    live = await gw.live_checked(sid) if sid else None
    session: Session | None = live.session if live else None
    name = _command_name(text)
    spec = gw.kernel.registry.command(name)
    if spec is None:
        raise GatewayError(4018, f"unknown command: /{name}")
    # /model alone only shows the choices; switching, compressing or branching needs an idle session.
    mutating = spec.name in SLASH_MUTATING and (spec.name != "model" or len(text.split()) > 1)
    if session is not None and session.busy and mutating:
        raise GatewayError(
            4009, f"/{spec.name} cannot run while a turn is running; interrupt first", {"reason": "busy"}
        )
    if spec.needs_session and session is None:
        raise GatewayError(4001, "session not found", {"session_id": sid, "resumable": False})
    try:
        sees = None if tenancy.tenant() is None else functools.partial(tenancy.seen, gw.tenants)
        result = await gw.kernel.dispatch_slash(
            session, text, surface="tui", sees=sees, charge=tenancy.charge()
        )
    except GatewayError:
        raise
    except Exception as exc:
        from hermes_core import CommandNotAvailable, CommandUsageError, HermesError

        if isinstance(exc, CommandUsageError):
            raise GatewayError(4004, str(exc), {"usage": exc.usage}) from exc
        if isinstance(exc, CommandNotAvailable):
            raise GatewayError(4018, str(exc)) from exc
        if isinstance(exc, HermesError):
            raise gw.map_error(exc, "command.dispatch") from exc
        raise GatewayError(5030, f"command handler failed: {type(exc).__name__}") from exc
    if result is None:
        raise GatewayError(4018, f"unknown command: /{name}")
    if live is not None and gw.lives.get(live.session.id) is live:
        live.stream.emit_info(force=True)
    if live is not None and result.data is not None and result.data.get("action") == "new_session":
        return await _new_session(gw, conn, live)
    if result.data is not None and result.data.get("action") == "resume_session":
        return await _resumed_session(gw, conn, live, result)
    if live is not None and result.kind == "send":
        _reattach_images(live, result)
    branched = _branched_session(gw, live, result)
    if live is not None and branched is not None:
        # /branch opened the copy in this kernel; serve it as session.branch would.
        # the directive plus the new session's snapshot (CommandDirective says so)
        merged = {**_directive(result), **await adopt_branch(gw, conn, branched, live.session.id)}
        return cast("wr.CommandDirective", merged)
    return _directive(result)


def _branched_session(gw: Gateway, live: Live | None, result: CommandResult) -> Session | None:
    """Return the session a ``/branch`` result names, when it is open here and not yet served."""
    data = result.data or {}
    child_id, parent_id = data.get("session_id"), data.get("parent_session_id")
    if live is None or parent_id != live.session.id or not isinstance(child_id, str):
        return None
    if child_id in gw.lives:
        return None
    return gw.kernel.live_session(child_id)


def _reattach_images(live: Live, result: CommandResult) -> None:
    """Queue a ``send`` result's images (``/retry``) as the session's pending attachments.

    The host answers a ``send`` directive with ``prompt.submit`` of the message text, which
    takes the pending attachments with it, so the prompt goes again with its images.
    """
    parts = (result.data or {}).get("parts") or ()
    images = [part for part in parts if isinstance(part, ImagePart)]
    live.attachments.extend({"part": part, "mime": part.mime} for part in images)


async def _new_session(gw: Gateway, conn: Conn, live: Live) -> wr.CommandDirective:
    """Carry out ``/new``: an ``exec`` directive plus the new session's snapshot
    (docs/reference/tui-gateway.md#snapshot).

    The snapshot's ``session_id`` is the id the host switches to, as ``session.create`` would
    have answered; ``previous_session_id`` names the session that stays live and resumable.

    :param gw: the gateway.
    :param conn: the caller, to which the new session is bound.
    :param live: the session ``/new`` was typed in.
    :returns: the directive with the snapshot merged in.
    """
    new = await start_new(gw, conn, live)
    old_id, new_id = live.session.id, new.session.id
    out: dict[str, Any] = {
        "type": "exec",
        "output": f"Started new session {new_id}; {old_id} is kept and can be resumed.",
    }
    out.update(await snapshot(gw, new))
    out["previous_session_id"] = old_id
    return cast("wr.CommandDirective", out)  # with the snapshot merged in


async def _resumed_session(
    gw: Gateway, conn: Conn, live: Live | None, result: CommandResult
) -> wr.CommandDirective:
    """Carry out ``/resume ID``: open the session as ``session.resume`` does, bound to the caller.

    :returns: an ``exec`` directive with the resumed session's snapshot merged in (its
        ``session_id`` and ``resumed`` are the id to switch to) and ``previous_session_id``.
    """
    out: dict[str, Any] = {"type": "exec", "output": result.output or ""}
    out.update(await resume(gw, conn, {"session_id": (result.data or {})["session_id"]}))
    if live is not None:
        out["previous_session_id"] = live.session.id
    return cast("wr.CommandDirective", out)  # with the snapshot merged in


async def slash_exec(gw: Gateway, conn: Conn, p: Params) -> wr.SlashExecResult:
    """``slash.exec``: the compatibility alias; ``{output, …}`` for an exec directive."""
    q = wp.parse(wp.SlashExecParams, p)
    out = await dispatch(gw, conn, {"session_id": q.session_id, "command": q.command})
    # An exec keeps what else it says (``/new``'s new session), minus the directive type.
    kept = dict(out) if out["type"] != "exec" else {k: v for k, v in out.items() if k != "type"}
    return cast("wr.SlashExecResult", kept)


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""
    gw.fast["command.resolve"] = lambda conn, p: resolve(gw, conn, p)
    gw.slow.update(
        {
            "commands.catalog": lambda conn, p: catalog(gw, conn, p),
            "command.dispatch": lambda conn, p: dispatch(gw, conn, p),
            "slash.exec": lambda conn, p: slash_exec(gw, conn, p),
        }
    )
