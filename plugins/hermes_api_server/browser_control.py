"""Browser-extension control (docs/reference/api-server.md#browser-control): opt-in, off by default.

A controller registers for one existing session and gets a single-use ticket; it then opens a
WebSocket carrying the ticket in ``Sec-WebSocket-Protocol``. While attached, turns its principal
runs in that session see one ``browser_*`` tool per granted capability; each call becomes a
``browser.controller.command`` frame and waits for the controller's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from hermes_api_server.errors import ApiError, json_response
from hermes_api_server.http_util import read_json
from hermes_api_server.state import get_state, principal
from hermes_core import ToolError, ToolResult, ToolSpec

if TYPE_CHECKING:
    from hermes_core import Kernel, ToolContext

log = logging.getLogger("hermes.api.browser")
PROTOCOL = "hermes-browser-control-v1"
TICKET_PREFIX = "hermes-browser-control-ticket."
TICKET_TTL_S = 30.0
COMMAND_TIMEOUT_S = 30.0
MAX_FRAME = 1 << 20
ALLOWED = (
    "browser_back",
    "browser_click",
    "browser_navigate",
    "browser_press",
    "browser_screenshot",
    "browser_scroll",
    "browser_snapshot",
    "browser_tab_activate",
    "browser_tabs",
    "browser_type",
    "controller.noop",
)
DEVELOPER = ("browser_cdp", "browser_evaluate")
MAX_PENDING_CANCELS = 512


@dataclass(slots=True)
class Scope:
    """What a ticket grants."""

    principal: str
    session_id: str
    controller_id: str
    profile_id: str
    family: str
    capabilities: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "principal_id": self.principal,
            "session_id": self.session_id,
            "controller_id": self.controller_id,
            "browser_profile_id": self.profile_id,
            "transport_family": self.family,
            "capabilities": list(self.capabilities),
        }


@dataclass(slots=True)
class Controller:
    """An attached controller socket."""

    scope: Scope
    ws: web.WebSocketResponse | None
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    cancels: list[dict[str, Any]] = field(default_factory=list)


class BrowserHub:
    """Tickets, attached controllers and the command bridge."""

    def __init__(self) -> None:
        self.tickets: dict[str, tuple[Scope, float]] = {}
        self.lanes: dict[tuple[str, str, str], Controller] = {}

    def issue(self, scope: Scope) -> str:
        now = time.monotonic()
        for ticket, (_, expiry) in list(self.tickets.items()):
            if expiry < now:
                del self.tickets[ticket]
        ticket = secrets.token_urlsafe(32)
        self.tickets[ticket] = (scope, now + TICKET_TTL_S)
        return ticket

    def redeem(self, ticket: str) -> Scope | None:
        entry = self.tickets.pop(ticket, None)
        if entry is None or entry[1] < time.monotonic():
            return None
        return entry[0]

    def granted(self, who: str, session_id: str) -> set[str]:
        """Return the browser tools granted to this principal in this session."""
        names: set[str] = set()
        for (owner, sid, _), controller in self.lanes.items():
            if owner == who and sid == session_id and controller.ws is not None:
                names.update(c for c in controller.scope.capabilities if c.startswith("browser_"))
        return names

    def controller_for(self, who: str, session_id: str, action: str) -> Controller | None:
        for (owner, sid, _), controller in self.lanes.items():
            if (
                owner == who
                and sid == session_id
                and controller.ws is not None
                and action in controller.scope.capabilities
            ):
                return controller
        return None

    async def command(
        self, who: str, session_id: str, action: str, args: dict[str, Any], ctx: ToolContext
    ) -> str:
        """Send one command to the controller and wait for its result."""
        controller = self.controller_for(who, session_id, action)
        if controller is None or controller.ws is None:
            raise ToolError(f"no browser controller is attached for {action}")
        command_id = "cmd_" + secrets.token_hex(8)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        controller.pending[command_id] = future
        frame = {
            "method": "browser.controller.command",
            "params": {
                "command_id": command_id,
                "action": action,
                "arguments": args,
                "controller_id": controller.scope.controller_id,
                "browser_profile_id": controller.scope.profile_id,
                "tool_call_id": ctx.call_id,
            },
        }
        try:
            await controller.ws.send_str(json.dumps(frame))
            deadline = time.monotonic() + COMMAND_TIMEOUT_S
            while not future.done():
                if ctx.cancelled.is_set():
                    raise ToolError("the browser command was cancelled")
                if time.monotonic() > deadline:
                    raise ToolError("the browser controller did not answer within 30 s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(future), 0.1)
            reply = future.result()
        except ToolError:
            await self._cancel(controller, command_id, ctx.call_id)
            raise
        finally:
            controller.pending.pop(command_id, None)
        if reply.get("ok") is not True:
            raise ToolError(str(reply.get("error") or "the browser command failed"))
        result = reply.get("result")
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)

    async def _cancel(self, controller: Controller, command_id: str, call_id: str) -> None:
        frame = {
            "method": "browser.controller.cancel",
            "params": {"command_id": command_id, "tool_call_id": call_id},
        }
        if controller.ws is not None and not controller.ws.closed:
            with contextlib.suppress(Exception):
                await controller.ws.send_str(json.dumps(frame))
                return
        if len(controller.cancels) < MAX_PENDING_CANCELS:
            controller.cancels.append(frame)


def install_tools(kernel: Kernel, hub: BrowserHub, developer_mode: bool) -> frozenset[str]:
    """Register one tool per browser capability; return their names."""
    names = [c for c in ALLOWED if c.startswith("browser_")] + (list(DEVELOPER) if developer_mode else [])
    for name in names:

        async def handler(args: dict[str, Any], ctx: ToolContext, _action: str = name) -> ToolResult:
            who = hub_owner.get(ctx.session_id, "")
            return ToolResult(await hub.command(who, ctx.session_id, _action, dict(args), ctx))

        kernel.registry.tools.setdefault(
            name,
            ToolSpec(
                name=name,
                description=f"Browser action {name[8:]} in the attached browser.",
                schema={"type": "object", "additionalProperties": True},
                handler=handler,
                kind="other",
                emoji="🌐",
            ),
        )
    return frozenset(names)


# The principal of the API turn running in each session (tools see only the session id).
hub_owner: dict[str, str] = {}


def _disabled() -> ApiError:
    return ApiError(404, "browser_control_disabled", "Browser control is disabled")


def _family(request: web.Request) -> str:
    peer = request.remote or ""
    try:
        return "local-api" if ipaddress.ip_address(peer).is_loopback else "remote-api"
    except ValueError:
        return "remote-api"


async def register(request: web.Request) -> web.Response:
    """Register a controller for one session (after the bearer check)."""
    state = get_state(request)
    settings = state.settings.browser_control
    if not settings.enabled or state.browser is None:
        raise _disabled()
    body = await read_json(request)
    version = body.get("protocol_version")
    if isinstance(version, bool) or version != 1 or not isinstance(version, int):
        raise ApiError(
            400,
            "browser_control_protocol_unsupported",
            "protocol_version must be 1",
            param="protocol_version",
        )
    ids: dict[str, str] = {}
    for name in ("session_id", "controller_id", "browser_profile_id"):
        value = body.get(name)
        if not isinstance(value, str) or not value or len(value) > 256:
            raise ApiError(
                400, "browser_control_invalid_registration", f"{name} must be 1-256 characters", param=name
            )
        ids[name] = value
    caps = body.get("capabilities")
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise ApiError(
            400, "browser_control_invalid_registration", "capabilities must be strings", param="capabilities"
        )
    try:
        known = await state.pool.exists(ids["session_id"])
    except Exception:
        raise ApiError(503, "session_db_unavailable", "Session storage is unavailable") from None
    if not known:
        raise ApiError(403, "browser_control_session_forbidden", "No such session", param="session_id")
    if any(c in DEVELOPER for c in caps) and not settings.developer_mode:
        raise ApiError(
            403, "browser_control_developer_mode_required", "Developer capabilities need developer_mode"
        )
    allowed = set(ALLOWED) | (set(DEVELOPER) if settings.developer_mode else set())
    granted = tuple(sorted({c for c in caps if c in allowed}))
    if not granted:
        raise ApiError(
            400,
            "browser_control_no_capabilities",
            "No allowlisted capability requested",
            param="capabilities",
        )
    scope = Scope(
        principal(request),
        ids["session_id"],
        ids["controller_id"],
        ids["browser_profile_id"],
        _family(request),
        granted,
    )
    ticket = state.browser.issue(scope)
    return json_response(
        {
            "protocol_version": 1,
            "ticket": ticket,
            "ticket_expires_at": int(time.time() + TICKET_TTL_S),
            "ticket_expires_in_seconds": int(TICKET_TTL_S),
            "ws_path": "/v1/browser-control/ws",
            "scope": scope.as_dict(),
        },
        status=201,
    )


def _ticket_invalid() -> ApiError:
    return ApiError(401, "browser_control_ticket_invalid", "Missing, unknown, used or expired ticket")


async def connect(request: web.Request) -> web.StreamResponse:
    """Accept a controller WebSocket authenticated by a single-use ticket."""
    state = get_state(request)
    hub: BrowserHub | None = state.browser
    if not state.settings.browser_control.enabled or hub is None:
        raise _disabled()
    if "ticket" in request.query:
        raise _ticket_invalid()
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    tickets = [p[len(TICKET_PREFIX) :] for p in offered if p.startswith(TICKET_PREFIX)]
    if PROTOCOL not in offered or len(tickets) != 1:
        raise _ticket_invalid()
    scope = hub.redeem(tickets[0])
    if scope is None:
        raise _ticket_invalid()
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise ApiError(400, "websocket_upgrade_required", "This route needs a WebSocket upgrade")
    ws = web.WebSocketResponse(protocols=(PROTOCOL,), heartbeat=30.0, max_msg_size=MAX_FRAME)
    await ws.prepare(request)
    lane = (scope.principal, scope.session_id, scope.family)
    old = hub.lanes.get(lane)
    if old is not None and (old.scope.controller_id, old.scope.profile_id) == (
        scope.controller_id,
        scope.profile_id,
    ):
        controller = old
        controller.ws = ws
        controller.scope = scope
        for frame in controller.cancels:
            await ws.send_str(json.dumps(frame))
        controller.cancels.clear()
    else:
        if old is not None:
            for future in old.pending.values():
                if not future.done():
                    future.set_result({"ok": False, "error": "the controller was replaced"})
            if old.ws is not None:
                await old.ws.close()
        controller = hub.lanes[lane] = Controller(scope, ws)
    try:
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            await _on_frame(hub, controller, ws, msg.data)
    finally:
        if controller.ws is ws:
            controller.ws = None
    return ws


async def _on_frame(hub: BrowserHub, controller: Controller, ws: web.WebSocketResponse, data: str) -> None:
    if controller.ws is not ws:
        return  # this socket no longer owns the scope
    try:
        frame = json.loads(data)
        method, params = frame["method"], frame.get("params") or {}
    except (ValueError, KeyError, TypeError, RecursionError):
        log.info("ignoring a malformed controller frame")
        return
    if method == "browser.controller.result":
        future = controller.pending.get(str(params.get("command_id")))
        if future is not None and not future.done():
            future.set_result(params)
    elif method in ("browser.controller.heartbeat", "browser.controller.detach"):
        nonce = params.get("nonce", "")
        if not isinstance(nonce, str) or len(nonce) > 128:
            log.info("ignoring a heartbeat with a bad nonce")
            return
        if method.endswith("detach"):
            for future in list(controller.pending.values()):
                if not future.done():
                    future.set_result({"ok": False, "error": "the controller detached"})
        await ws.send_str(json.dumps({"method": method, "params": {"nonce": nonce, "ok": True}}))
    else:
        log.info("ignoring controller method %r", method)
