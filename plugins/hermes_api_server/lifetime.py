"""The running ``hermes api`` server, from its listening socket to its exit: the busy-port
retry, the start-up banner, the event-loop lag monitor, the injected restart, signals, draining
and shutdown (docs/reference/api-server.md#shutdown-and-restart).

:mod:`hermes_api_server.server` checks the settings and builds the state, then hands it to
:func:`run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from hermes_api_server.access_log import BatchedAccessLog

if TYPE_CHECKING:
    from aiohttp import web

    from hermes_api_server.state import ServerState

PORT_RETRY_S = 3.0


def say(message: str) -> None:
    """Print one line for the operator on stderr, at once."""
    print(message, file=sys.stderr, flush=True)


def workspace_banner(state: ServerState) -> str:
    """Return the start-up line that says where the tools of new sessions work."""
    fixed = state.pool.default_workspace
    if fixed is not None:
        return f"Workspace: {fixed} (tools of new sessions read, write and run commands here)"
    return (
        f"Workspace: a new empty folder per session in {state.pool.workspaces} "
        "(start with --workspace DIR to let the tools work on a project)"
    )


async def backends_banner(state: ServerState) -> list[str]:
    """Return the start-up lines that say where sessions are stored and how runs are shared.

    An operator behind a load balancer sees at a glance that an instance uses the shared database
    and bus, not a file of its own.
    """
    storage = await state.kernel.sessions.storage_report()
    where = storage.get("server") or storage.get("path") or "this process's memory (lost at exit)"
    lines = [f"Storage: {storage.get('backend', '?')} at {where}"]
    bus = state.runs.bus
    if not bus.shared:
        lines.append("Run bus: in-process (runs are served by this instance only)")
    else:
        report = await bus.diagnostics()
        lines.append(f"Run bus: {bus.name} at {report.get('server', '?')} (this instance: {bus.instance_id})")
    return lines


async def _listen(runner: Any, host: str, port: int, header_timeout_s: float) -> asyncio.Server:
    """Open the listening socket, retrying a busy port for about 3 s.

    The socket is served by :mod:`hermes_api_server.protocol` rather than ``web.TCPSite`` so that
    aiohttp's own answers to malformed requests carry the JSON envelope
    (docs/reference/api-server.md#error-envelope).

    :param runner: the application runner, after ``setup()``.
    :param host: the bind address.
    :param port: the port (0 picks a free one).
    :param header_timeout_s: how long a connection may take to deliver a request head.
    :returns: the listening server.
    """
    from hermes_api_server.protocol import protocol_factory

    loop = asyncio.get_running_loop()
    factory = protocol_factory(runner, header_timeout_s)
    deadline = time.monotonic() + PORT_RETRY_S
    while True:
        try:
            return await loop.create_server(factory, host, port, reuse_address=True)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


async def _lag_monitor(state: ServerState) -> None:
    loop = asyncio.get_running_loop()
    settled = False
    while True:
        before = loop.time()
        await asyncio.sleep(0.5)
        state.loop_lag_ms = max(0.0, (loop.time() - before - 0.5) * 1000)
        if not settled and state.last_request_at is not None:
            # The first request imported what serving needs (the HTTP client, the provider's
            # modules); those stay for good too, so they leave the collector's reach as well.
            settled = True
            gc.freeze()


async def run(state: ServerState) -> int:
    """Serve the built state until SIGINT, SIGTERM or an injected restart; return the exit code."""
    from aiohttp import web

    from hermes_api_server.app import build_app

    app = build_app(state)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    access = BatchedAccessLog(logging.getLogger("hermes.api.access"))
    access.install()
    try:
        return await _serve(state, runner)
    finally:
        access.uninstall()


async def _serve(state: ServerState, runner: web.AppRunner) -> int:
    settings = state.settings
    try:
        listener = await _listen(runner, settings.host, settings.port, settings.header_timeout_s)
    except OSError as exc:
        await runner.cleanup()
        if exc.errno == errno.EADDRINUSE:
            say(f"Error: port {settings.port} is already in use")
            return 1
        say(f"Error: cannot listen on {settings.host}:{settings.port}: {exc}")
        return 1
    sockets = listener.sockets or ()
    port = sockets[0].getsockname()[1] if sockets else settings.port
    state.host, state.port = settings.host, port
    listeners = [listener]
    stop = asyncio.Event()

    def restart(delay_ms: int) -> None:
        """A scenario's restart fault: stop listening, cut every connection, shut down as on
        SIGTERM (running turns finish into the storage), then run the same command again on the
        same port (docs/reference/scenarios.md#faults)."""
        if stop.is_set():
            return
        from hermes_core import exec_at_exit

        for old in listeners:
            old.close()
        listeners.clear()
        manager = runner.server
        for handler in list(manager.connections if manager is not None else ()):
            if handler.transport is not None:
                handler.transport.abort()
        say(f"restarting the process on port {port} after an injected restart")
        exec_at_exit(sys.argv, "--port", str(port), delay_ms)
        stop.set()

    state.restart_listener = restart
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    # Everything made so far (modules, plugins, the app) lives as long as the server: take it
    # out of the cyclic collector's reach. Otherwise each full collection walks it all again
    # and stalls the event loop for tens of milliseconds under load.
    gc.freeze()
    say(f"Hermes API server listening on http://{host}:{port}/v1")
    if state.keyring.configured:
        say("API key: configured")
    else:
        say(f"API key: generated; read it from {state.keyring.path} (or run: hermes api --show-key)")
    say(workspace_banner(state))
    for line in await backends_banner(state):
        say(line)
    if settings.console:
        say(f"Console: http://{host}:{port}/console (sign in with the API key)")
    state.runs.start()
    from hermes_api_server.response_sweep import ResponseSweeper

    # Background responses whose owner died are settled without waiting for a reader.
    sweeper = ResponseSweeper(state)
    sweeper.start()
    monitor = asyncio.create_task(_lag_monitor(state), name="hermes-api-lag")
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals > 1:
            say("second signal: exiting now")
            import os

            os._exit(1)
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    try:
        await stop.wait()
        say("draining: finishing in-flight turns")
        await _drain(state)
    finally:
        monitor.cancel()
        await sweeper.close()
        await state.runs.close()
        for current in listeners:
            current.close()  # stop accepting; runner.cleanup() then closes the open connections
        await runner.cleanup()
        await state.store.close()
    return 0


def only_waiting_for_answers(state: ServerState) -> bool:
    """True when every busy top-level session waits for an answer (an approval, a clarify…).

    Such turns cannot finish by themselves, so the drain does not hold the process for the whole
    grace on their account. A subagent's question is asked on its top-level session, so a tree
    with a child waiting counts as waiting too.
    """
    questions = state.kernel.questions
    busy = [s for s in state.kernel.sessions.live if s.busy and s.lineage is None]
    return bool(busy) and all(questions.open_for(s.id) for s in busy)


async def _drain(state: ServerState) -> None:
    state.draining = True
    deadline = time.monotonic() + state.settings.shutdown_grace_s
    while time.monotonic() < deadline and state.in_flight() > 0 and not only_waiting_for_answers(state):
        await asyncio.sleep(0.05)
    await state.runs.interrupt_all()
    for session in list(state.kernel.sessions.live):
        if session.busy:
            with contextlib.suppress(Exception):
                await session.interrupt(reason="system", discard_queue=True)
    end = time.monotonic() + 2.0
    while time.monotonic() < end and state.active_turns > 0:
        await asyncio.sleep(0.05)
