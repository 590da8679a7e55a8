"""Run the gateway: stdio by default (docs/reference/tui-gateway.md#stdio), or a WebSocket server with
``--ws`` (docs/reference/tui-gateway.md#websocket)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from hermes_core import rpc

if TYPE_CHECKING:
    from hermes_core import TransportContext
    from hermes_tui_gateway.gateway import Conn, Gateway
    from hermes_tui_gateway.settings import TuiSettings

log = logging.getLogger("hermes.tui")
SWITCH_INTERVAL_S = 0.0001
# How long a stdio gateway a scenario fault cut waits for running turns before it exits.
RESPAWN_WAIT_S = 60.0
#: The exit code after a scenario fault cut the output (``hermes_core.scenarios.RESPAWN_EXIT_CODE``).
RESPAWN_EXIT_CODE = 75


def make_peer(gw: Gateway, conn: Conn, reader: Any, writer: Any) -> rpc.RpcPeer:
    """Create the shared peer for one connection with the gateway's hooks and the TUI options."""
    peer = rpc.RpcPeer(
        reader=reader,
        writer=writer,
        dispatch=gw.dispatch,
        options=rpc.TUI_OPTIONS,
        fast_path=lambda message: gw.fast_path(conn, message),
        prepare=lambda message: gw.prepare(conn, message),
        logger=log,
    )
    conn.peer = peer
    return peer


def _stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, lambda: None)


async def _start(ctx: TransportContext[TuiSettings]) -> Gateway | None:
    from hermes_tui_gateway.gateway import Gateway

    try:
        await ctx.ready
    except Exception as exc:
        print(f"hermes tui: cannot start: {exc}", file=sys.stderr)
        return None
    gw = Gateway(ctx.kernel, ctx.settings)
    gw.reload_settings = ctx.reload_settings
    await gw.load_epoch()
    return gw


async def serve(ctx: TransportContext[TuiSettings]) -> int:
    """Serve until input ends or a stop signal; return the exit code.

    :param ctx: the transport context from the CLI.
    :returns: 0 on a graceful stop, 1 when the kernel could not start, 2 on a usage error.
    """
    ws = ctx.options.get("ws")
    if ws:
        from hermes_tui_gateway.ws import serve_ws

        return await serve_ws(ctx, str(ws), _start, _stop_signals)
    return await _serve_stdio(ctx)


async def _serve_stdio(ctx: TransportContext[TuiSettings]) -> int:
    guard = rpc.protect_stdout("stderr")
    # Frames are written by the peer's writer thread; a short GIL switch interval lets it (and so
    # control responses) through promptly while the loop thread is busy streaming.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    with contextlib.suppress(OSError):
        if os.isatty(0):
            print(
                "hermes tui is a JSON-RPC gateway for host programs (NDJSON on stdio), "
                "not an interactive UI.",
                file=sys.stderr,
            )
    stop = asyncio.Event()
    _stop_signals(stop)
    gw = await _start(ctx)
    if gw is None:
        return 1
    from hermes_tui_gateway.gateway import Conn

    conn = Conn(gw, "stdio")
    cut = asyncio.Event()
    writer: Any = guard.frame_fd
    if (gw.kernel.settings.model or "").startswith("mock:scenario:"):
        from hermes_core import scenarios  # only a scenario brings faults (docs/reference/scenarios.md)

        faults = scenarios.frame_faults(gw.kernel.settings.model, "tui", data_dir=gw.data_dir)
        if faults is not None:
            writer = scenarios.FaultyStdout(guard.frame_fd, faults, cut.set, "tui")
    peer = make_peer(gw, conn, 0, writer)
    gw.attach(conn)
    runner = asyncio.create_task(peer.run())
    stopper = asyncio.create_task(stop.wait())
    cutter = asyncio.create_task(cut.wait())
    await asyncio.wait([runner, stopper, cutter], return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    cutter.cancel()
    lost = runner.done() and not runner.cancelled() and runner.result() == "output_lost"
    if cut.is_set():
        # A scenario's drop or restart fault (docs/reference/scenarios.md#faults-on-stdio): let
        # running turns end, so their events are in the log a respawned gateway replays.
        log.warning("tui: output cut by a scenario fault; exiting %d once turns end", RESPAWN_EXIT_CODE)
        await until_idle(gw, RESPAWN_WAIT_S)
    try:
        await asyncio.wait_for(gw.shutdown(), 4)
    except (TimeoutError, Exception):
        log.warning("tui: shutdown did not finish in time", exc_info=True)
    if not lost:
        await peer.flush(1)
    await peer.aclose(timeout=0.5)
    runner.cancel()
    with contextlib.suppress(BaseException):
        await runner
    return RESPAWN_EXIT_CODE if cut.is_set() else 0


async def until_idle(gw: Gateway, limit_s: float) -> None:
    """Wait (at most ``limit_s``) until no live session of the gateway runs a turn."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while any(live.session.busy for live in gw.lives.values()) and loop.time() < deadline:
        await asyncio.sleep(0.05)
