"""``hermes tui --ws HOST:PORT``: the same protocol over WebSocket at ``/api/ws``
(docs/reference/tui-gateway.md#websocket).

aiohttp is imported here only, when ``--ws`` is given. Each authenticated socket gets its own
shared peer, fed one text frame per JSON-RPC object.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import os
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hermes_core import AccessKeys, redact_log_handlers, rpc, scenarios
from hermes_tui_gateway import tenancy
from hermes_tui_gateway.access import TOKEN_KEY_ID, authenticate, watch_revocation
from hermes_tui_gateway.terminal import TerminalEof

if TYPE_CHECKING:
    from aiohttp import web

    from hermes_core import TransportContext
    from hermes_tui_gateway.gateway import Gateway
    from hermes_tui_gateway.settings import TuiSettings

log = logging.getLogger("hermes.tui")
MAX_FRAME = 8 * 1024 * 1024
SUBPROTOCOL = "hermes.v1"
TOKEN_PREFIX = "hermes.token."


def parse_hostport(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` or ``[v6]:PORT``; raise ValueError when malformed or out of range."""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        if not rest.startswith(":"):
            raise ValueError(value)
        port = int(rest[1:])
    else:
        host, sep, text = value.rpartition(":")
        if not sep or not host:
            raise ValueError(value)
        port = int(text)
    if not 0 <= port <= 65535:
        raise ValueError(value)
    return host, port


def is_loopback(host: str) -> bool:
    """Whether a host name or address is loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_token(gw: Gateway) -> str:
    """Return the token: ``--token-file``, then ``HERMES_TUI_TOKEN``, else a generated file."""
    settings = gw.settings
    if settings.token_file is not None:
        return Path(settings.token_file).expanduser().read_text(encoding="utf-8").strip()
    if settings.token:
        return settings.token
    path = gw.data_dir / "tui-gateway.token"
    with contextlib.suppress(OSError):
        existing = path.read_text(encoding="utf-8").strip()
        if existing:
            log.warning("tui: using the WebSocket token in %s", path)
            return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    token = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    log.warning("tui: wrote a new WebSocket token to %s", path)
    return token


class _Reader:
    """Feed text frames to the peer as NDJSON lines; answer binary frames with -32600."""

    def __init__(self, ws: web.WebSocketResponse, peer_ref: list[rpc.RpcPeer]) -> None:
        self._ws = ws
        self._peer = peer_ref

    async def read(self, n: int = -1) -> bytes:
        from aiohttp import WSMsgType

        while True:
            msg = await self._ws.receive()
            if msg.type == WSMsgType.TEXT:
                # A raw newline in valid JSON is whitespace between tokens, never inside a string.
                text: str = msg.data
                data = text.encode("utf-8").replace(b"\r", b" ").replace(b"\n", b" ")
                return data + b"\n"
            if msg.type == WSMsgType.BINARY:
                self._peer[0].send(
                    rpc.error_response(None, rpc.RpcError(rpc.INVALID_REQUEST, "invalid request"))
                )
                continue
            return b""


class _Writer:
    """Send each frame the peer writes as one text message.

    With a scenario's faults (docs/reference/scenarios.md#faults) each frame first asks the
    connection's frame counter what to do: drop the connection, delay or duplicate the frame, or
    restart the listener.
    """

    def __init__(
        self,
        ws: web.WebSocketResponse,
        faults: scenarios.FrameCounter | None = None,
        drop: Callable[[], None] | None = None,
        restart: Callable[[int], None] | None = None,
    ) -> None:
        self._ws = ws
        self._pending: list[bytes] = []
        self._faults = faults
        self._drop = drop
        self._restart = restart
        self._dropped = False

    def write(self, data: bytes) -> None:
        self._pending.append(data)

    async def drain(self) -> None:
        pending, self._pending = self._pending, []
        for chunk in pending:
            for frame in chunk.split(b"\n"):
                if frame:
                    await self._send(frame.decode("utf-8"))

    async def _send(self, text: str) -> None:
        if self._dropped:
            return
        fault = self._faults.next_frame() if self._faults is not None else None
        if fault is None:
            await self._ws.send_str(text)
            return
        log.warning(
            "tui: injecting fault %s before frame %d", fault.action, self._faults.sent if self._faults else 0
        )
        if fault.action == "delay":
            await asyncio.sleep(fault.delay_ms / 1000)
            await self._ws.send_str(text)
        elif fault.action == "duplicate":
            await self._ws.send_str(text)
            await self._ws.send_str(text)
        else:  # drop or restart: the frame is lost with the connection
            self._dropped = True
            if fault.action == "restart" and self._restart is not None:
                self._restart(fault.delay_ms)
            elif self._drop is not None:
                self._drop()


def _offered_token(request: web.Request, url_token_ok: bool) -> tuple[str | None, bool]:
    """Return the presented token and whether it came through an accepted channel.

    :param url_token_ok: whether ``?token=`` counts: only on a loopback listener, for clients
        that can set neither headers nor subprotocols (the Ink TUI's ``HERMES_TUI_GATEWAY_URL``).
    """
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), "token" not in request.query
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    tokens = [p[len(TOKEN_PREFIX) :] for p in offered if p.startswith(TOKEN_PREFIX)]
    if tokens:
        return tokens[0], SUBPROTOCOL in offered and "token" not in request.query
    in_url = request.query.getall("token", [])
    if len(in_url) == 1:
        return in_url[0], url_token_ok
    return None, False


def _without_foreign_protocols(request: web.Request) -> web.Request:
    """Return the request to upgrade, without a subprotocol list that lacks ``hermes.v1``.

    When no offered subprotocol matches, aiohttp logs a warning quoting every offered value, and
    a token is offered as one (``hermes.token.<token>``). Such a list is dropped before the
    handshake, so the token never reaches a log; the socket is then closed with 4401 anyway.
    """
    header = request.headers.get("Sec-WebSocket-Protocol")
    if header is None or SUBPROTOCOL in (p.strip() for p in header.split(",")):
        return request
    from multidict import CIMultiDict

    headers = CIMultiDict(request.headers)
    del headers["Sec-WebSocket-Protocol"]
    return request.clone(headers=headers)


def _origin_ok(origin: str | None, allowed: list[str]) -> bool:
    if not origin:
        return True
    if origin in allowed:
        return True
    host = urlsplit(origin).hostname or ""
    return is_loopback(host)


async def serve_ws(
    ctx: TransportContext[TuiSettings],
    where: str,
    start: Callable[[TransportContext[TuiSettings]], Awaitable[Gateway | None]],
    stop_signals: Callable[[asyncio.Event], None],
) -> int:
    """Serve WebSocket connections until a stop signal."""
    from aiohttp import web

    from hermes_tui_gateway.gateway import Conn
    from hermes_tui_gateway.serve import RESPAWN_WAIT_S, make_peer, until_idle

    try:
        host, port = parse_hostport(where)
    except ValueError:
        print(f"hermes tui: --ws expects HOST:PORT with a port 0-65535, got {where!r}", file=sys.stderr)
        return 2
    stop = asyncio.Event()
    stop_signals(stop)
    # Unlike stdio, where stdin is the protocol, a WebSocket server is run from a terminal by a
    # person: Ctrl-C and Ctrl-D stop it the way they stop `hermes api`.
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    gw = await start(ctx)
    if gw is None:
        return 1
    if not is_loopback(host) and not gw.settings.allow_remote:
        print(
            f"hermes tui: --ws host {host} is not loopback; pass --allow-remote to allow it", file=sys.stderr
        )
        return 2
    try:
        token = load_token(gw)
    except OSError as exc:
        print(f"hermes tui: cannot read the token: {exc}", file=sys.stderr)
        return 2

    gw.kernel.redactor.add(token)  # (values shorter than 6 characters are not registered)
    redact_log_handlers(gw.kernel.redactor)

    closing: set[asyncio.Future[object]] = set()
    sockets: dict[web.WebSocketResponse, asyncio.Transport | None] = {}
    listening: list[web.TCPSite] = []

    restart_after: list[int] = []

    def restart(delay_ms: int) -> None:
        """A scenario's restart fault: close the listener and every socket now, then restart the
        process (:mod:`hermes_core.transport_kit.restart`)."""
        if restart_after:
            return
        restart_after.append(delay_ms)
        for open_transport in list(sockets.values()):
            if open_transport is not None:
                open_transport.abort()
        stop.set()

    # A token in the URL (?token=) is accepted on a loopback listener only: nothing else can reach
    # it, and the Ink TUI can carry the token no other way.
    url_token_ok = is_loopback(host)
    keys = AccessKeys(gw.kernel.records) if gw.kernel.records.available else None

    async def handler(request: web.Request) -> web.WebSocketResponse:
        offered, channel_ok = _offered_token(request, url_token_ok)
        ws = web.WebSocketResponse(protocols=(SUBPROTOCOL,), max_msg_size=MAX_FRAME, heartbeat=20.0)
        await ws.prepare(_without_foreign_protocols(request))
        who = await authenticate(keys, offered, token) if channel_ok and offered is not None else None
        if who is None:
            await ws.close(code=4401, message=b"unauthorized")
            return ws
        if not _origin_ok(request.headers.get("Origin"), list(gw.settings.allow_origin)):
            await ws.close(code=4403, message=b"origin not allowed")
            return ws
        conn = Conn(gw, "ws")
        conn.principal = who
        # Every task serving this socket's requests serves the key's tenant (its sessions only).
        tenancy.set_current(who)
        watcher = None
        if keys is not None and who.key_id != TOKEN_KEY_ID:
            watcher = asyncio.ensure_future(
                watch_revocation(keys, who, lambda: ws.close(code=4401, message=b"key revoked"))
            )
        peer_ref: list[rpc.RpcPeer] = []
        transport = request.transport
        sockets[ws] = transport

        def drop() -> None:
            if transport is not None:
                transport.abort()  # like a network failure: no close frame

        faults = scenarios.frame_faults(gw.kernel.settings.model, "tui", data_dir=gw.data_dir)
        peer = make_peer(gw, conn, _Reader(ws, peer_ref), _Writer(ws, faults, drop, restart))
        peer_ref.append(peer)

        def slow() -> None:
            conn.alive = False
            closing.add(asyncio.ensure_future(ws.close(code=1013, message=b"slow consumer")))

        conn.on_slow = slow
        gw.attach(conn)
        try:
            await peer.run()
        finally:
            if watcher is not None:
                watcher.cancel()
            sockets.pop(ws, None)
            await gw.detach(conn)
            await peer.aclose(timeout=0.5)
            if not ws.closed:
                await ws.close(code=1000)
        return ws

    app = web.Application()
    app.router.add_get("/api/ws", handler)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        print(f"hermes tui: cannot listen on {where}: {exc}", file=sys.stderr)
        await runner.cleanup()
        return 2
    listening.append(site)
    bound = port
    server = getattr(site, "_server", None)
    if server is not None and server.sockets:
        bound = server.sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"hermes tui: listening on ws://{shown}:{bound}/api/ws", file=sys.stderr, flush=True)
    watching = TerminalEof(stop)
    try:
        await stop.wait()
    finally:
        watching.close()
    if restart_after:
        # Stop listening at once, let running turns end (their events reach the log), then stop
        # like on SIGTERM and exec the same command on the same port.
        for site_now in listening:
            await site_now.stop()
        await until_idle(gw, RESPAWN_WAIT_S)
    gw.closing = True
    for conn in list(gw.conns):
        conn.alive = False
    try:
        await asyncio.wait_for(gw.shutdown(), 4)
    except (TimeoutError, Exception):
        log.warning("tui: shutdown did not finish in time", exc_info=True)
    await runner.shutdown()
    await runner.cleanup()
    if restart_after:
        log.warning("tui: restarting the process on %s:%s after an injected restart", shown, bound)
        from hermes_core import exec_at_exit

        exec_at_exit(sys.argv, "--ws", f"{shown}:{bound}", restart_after[0])
    return 0
