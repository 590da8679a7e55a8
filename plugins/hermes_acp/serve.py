"""``hermes acp``: serve the Agent Client Protocol on stdin/stdout
(docs/reference/acp.md#start-up, #stdio-hygiene-and-shutdown).

Order: protect stdout (frames get a private duplicate of fd 1; fd 1 itself goes to the log
file), route logging to the log file, pick up what stdin already holds, start the peer (which
answers ``initialize`` in its fast path), and only then let the kernel's start-up and the
``jsonrpcserver`` import take the loop. Normally :mod:`hermes_acp.early` has already protected
stdout and answered ``initialize`` before the plugins loaded; then this adopts its guard, its
leftover bytes and the client's capabilities. EOF, SIGTERM or SIGHUP close every session and
exit 0 within 2 s; SIGPIPE and SIGINT are ignored. If the kernel cannot start, every request is
answered with the reason until EOF or a signal, and the exit code is 1. A scenario's ``drop`` or
``restart`` fault cuts the output; running turns then end and the exit code is 75
(docs/reference/scenarios.md#faults-on-stdio).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_acp.conn import AcpConnection
from hermes_acp.early import take as take_early
from hermes_acp.faults import RESPAWN_EXIT_CODE, RESPAWN_WAIT_S, FaultArming, until_idle
from hermes_acp.stdio import PrimedReader, answer_waiting_initialize, setup_logging
from hermes_core import rpc

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import TransportContext

log = logging.getLogger("hermes_acp")
PRIME_WAIT_S = 0.05
SHUTDOWN_SESSIONS_S = 1.3


async def serve(ctx: TransportContext[AcpSettings], data_dir: Path, *, stdin_tty: bool = False) -> int:
    """Serve ACP until EOF or a signal.

    :param ctx: the transport context.
    :param data_dir: ``<data dir>`` (the log goes to ``logs/acp.log`` below it).
    :param stdin_tty: stdin is a terminal (print a hint).
    :returns: 0, or 1 when start-up failed.
    """
    early = take_early()
    logs = data_dir / "logs"
    try:
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / "acp.log"
        if early is None:
            guard = rpc.protect_stdout(log_path)
        else:
            guard = early.guard
            guard.redirect(log_path)
    except OSError as exc:
        os.write(2, f"hermes acp: cannot open the log file under {logs}: {exc}\n".encode())
        return 1
    setup_logging(log_path, ctx.kernel.redactor)
    if stdin_tty:
        os.write(2, b"hermes acp: speaks ACP on stdin/stdout; start it from an IDE (see --check)\n")
    loop = asyncio.get_running_loop()
    conn = AcpConnection(ctx)
    faults = FaultArming(data_dir)
    conn.on_ready = faults.arm
    if early is None:
        primed = PrimedReader.prime(0, PRIME_WAIT_S)
    else:
        primed = early.rest + PrimedReader.prime(0, 0)
        if early.answered is not None:
            # The early thread already wrote the reply; record the client's capabilities.
            with contextlib.suppress(rpc.RpcError):
                conn.fast_path(early.answered)
            log.info("initialize answered before the plugins loaded")
    reader = PrimedReader(0, b"")
    peer = rpc.RpcPeer(
        reader=reader,
        writer=guard.frame_fd,
        dispatch=conn.dispatch,
        options=rpc.ACP_OPTIONS,
        fast_path=conn.fast_path,
        prepare=conn.prepare,
        logger=logging.getLogger("hermes_acp.rpc"),
    )
    conn.peer = peer
    # Answer an initialize already waiting on stdin now, before the kernel's start-up work
    # (queued behind this step) takes the loop; the rest of the bytes go through the peer.
    reader.push(answer_waiting_initialize(conn, peer, primed))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    for sig in (signal.SIGPIPE, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, lambda: None)
    reading = asyncio.create_task(peer.run(), name="hermes-acp-peer")
    stopping = asyncio.create_task(stop.wait())
    starting = asyncio.ensure_future(_start(ctx, conn))
    cutting = asyncio.create_task(faults.cut.wait())
    code = 0
    try:
        waiting = {reading, stopping, starting, cutting}
        while True:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if starting in done:
                waiting.discard(starting)
                if starting.result() is not None:
                    # _start logged the reason (one stderr line). Keep reading until EOF or a
                    # signal, so every request the editor sends is answered with that reason
                    # instead of finding the agent gone; then exit 1.
                    code = 1
                continue
            if cutting in done:
                # A scenario's drop or restart (docs/reference/scenarios.md#faults-on-stdio): let
                # running turns end, so a respawned agent's session/load replays them whole.
                log.warning("output cut by a scenario fault; exiting %d once turns end", RESPAWN_EXIT_CODE)
                await until_idle(conn, RESPAWN_WAIT_S)
            break
        if not starting.done():
            # Input ended during start-up: still report a failed start (exit 1), briefly.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(starting), 1.0)
        if code == 0 and starting.done() and not starting.cancelled() and starting.result() is not None:
            code = 1
    finally:
        for task in (stopping, starting, cutting):
            task.cancel()
        await _shutdown(conn, peer)
        reading.cancel()
        with contextlib.suppress(BaseException):
            await reading
        reader.close()
        with contextlib.suppress(OSError):
            os.close(guard.frame_fd)
    return RESPAWN_EXIT_CODE if faults.cut.is_set() else code


async def _start(ctx: TransportContext[AcpSettings], conn: AcpConnection) -> str | None:
    """Import the dispatcher once ``initialize`` is out, and wait for the kernel.

    :returns: ``None`` once ready, else the start-up error text.
    """
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(conn.initialized.wait(), 0.5)
    try:
        await ctx.ready
    except Exception as exc:
        log.error("start-up failed: %s", exc)
        return str(exc) or type(exc).__name__
    import hermes_acp.methods  # noqa: F401  (jsonrpcserver, pydantic: after the initialize reply)

    return None


async def _shutdown(conn: AcpConnection, peer: rpc.RpcPeer) -> None:
    """Close every live session (answering their prompts), then stop the peer."""
    from hermes_acp.prompting import interrupt_session

    async def close_all() -> None:
        for acp_session in list(conn.sessions.values()):
            if acp_session.closed:
                continue
            with contextlib.suppress(Exception):
                await interrupt_session(conn, acp_session)
            acp_session.closed = True
            with contextlib.suppress(Exception):
                await acp_session.core.close()

    conn.cancel_background()
    try:
        await asyncio.wait_for(close_all(), SHUTDOWN_SESSIONS_S)
    except (TimeoutError, Exception):
        log.warning("closing the sessions took too long; exiting anyway")
    await peer.aclose(cancel_handlers=False, timeout=0.3)
