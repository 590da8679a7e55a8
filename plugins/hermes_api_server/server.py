"""Start-up, the bind guard, the banner, draining and shutdown of ``hermes api``
(docs/reference/api-server.md#start-up-and-settings)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import logging
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_api_server.access_log import BatchedAccessLog
from hermes_api_server.keys import KeyFileError, KeyRing, is_loopback, read_or_create_key
from hermes_api_server.runs_control import on_control

if TYPE_CHECKING:
    from aiohttp import web

    from hermes_api_server.settings import ApiSettings
    from hermes_api_server.state import ServerState
    from hermes_core import Kernel, TransportContext

log = logging.getLogger("hermes.api")
EXIT_USAGE = 2
PORT_RETRY_S = 3.0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def data_dir_of(kernel: Kernel) -> Path:
    """Return the Hermes data directory (HERMES_HOME, else the platformdirs user data dir)."""
    configured = kernel.settings.data_dir
    if configured is not None:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_data_dir("hermes"))


def keyring_for(settings: ApiSettings, data_dir: Path) -> KeyRing:
    """Return the configured keys, else the generated one."""
    configured = settings.configured_keys
    if configured:
        return KeyRing(tuple(k.encode("utf-8") for k in configured), "configured")
    key, path = read_or_create_key(data_dir)
    return KeyRing((key.encode("utf-8"),), "generated", path)


async def serve(ctx: TransportContext[ApiSettings]) -> int:
    """Run the API server until SIGINT or SIGTERM; return the exit code."""
    if ctx.options.get("check"):
        from hermes_api_server.check import run_check

        return await run_check(ctx)
    await ctx.ready
    from hermes_api_server.settings import ApiSettings

    # The access log goes to stderr (the CLI's root handler) even though the root level is WARNING.
    logging.getLogger("hermes.api.access").setLevel(logging.INFO)

    settings: ApiSettings = ctx.settings
    if not isinstance(settings, ApiSettings):
        settings = ApiSettings.model_validate(dict(settings or {}))
    kernel = ctx.kernel
    data_dir = data_dir_of(kernel)
    show_key = bool(ctx.options.get("show-key"))
    if show_key:
        if settings.configured_keys:
            print(settings.configured_keys[0], flush=True)
            return 0
        try:
            key, _ = read_or_create_key(data_dir)
        except KeyFileError as exc:
            _say(f"Error: {exc}")
            return EXIT_USAGE
        print(key, flush=True)
        return 0
    for alias, target in settings.model_aliases.items():
        try:
            await kernel.resolve_model(target)
        except Exception as exc:
            _say(f"Error: invalid [api_server] settings: model_aliases.{alias}: {exc}")
            return EXIT_USAGE
    try:
        workspace = resolve_workspace(settings.workspace)
    except ValueError as exc:
        _say(f"Error: invalid [api_server] settings: workspace: {exc}")
        return EXIT_USAGE
    if not is_loopback(settings.host) and not settings.configured_keys:
        _say(
            f"Error: Refusing to listen on {settings.host}: set API_SERVER_KEY (or api_server.key) first; "
            "the generated key is for loopback use only."
        )
        return EXIT_USAGE
    try:
        keyring = keyring_for(settings, data_dir)
    except KeyFileError as exc:
        _say(f"Error: {exc}")
        return EXIT_USAGE
    from hermes_api_server.key_redaction import protect_keys

    protect_keys(kernel, keyring)
    if not is_loopback(settings.host):
        log.warning(
            "listening on %s: traffic is plain HTTP (put a TLS proxy in front) and tools run on this host",
            settings.host,
        )
    from hermes_api_server.bus import build_bus
    from hermes_core import ConfigError

    try:
        bus = build_bus(kernel, settings)
    except ConfigError as exc:
        _say(f"Error: {exc}")
        return 1
    state = await _build_state(kernel, settings, keyring, data_dir, workspace, shared_bus=bus.shared)
    try:
        await bus.start(functools.partial(on_control, state), state.runs)
    except ConnectionError as exc:
        _say(f"Error: {exc}")
        await state.store.close()
        return 1
    state.runs.bus = bus
    # After the bus is up: with shared records it tells runs of live instances from left-overs.
    await state.runs.reconcile_after_restart()
    return await _run(state)


def resolve_workspace(configured: Path | None) -> Path | None:
    """Return the server's workspace as an absolute directory, or None for per-session folders.

    A relative path is taken from the directory ``hermes api`` was started in.

    :param configured: ``--workspace`` / ``API_SERVER_WORKSPACE`` / ``api_server.workspace``.
    :raises ValueError: the path is not an existing directory.
    """
    if configured is None:
        return None
    resolved = configured.expanduser().resolve()
    if not resolved.is_dir():
        raise ValueError(f"{configured} is not an existing directory")
    return resolved


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


async def _build_state(
    kernel: Kernel,
    settings: ApiSettings,
    keyring: KeyRing,
    data_dir: Path,
    workspace: Path | None,
    *,
    shared_bus: bool,
) -> ServerState:
    from hermes_api_server.chat_index import ChatIndex
    from hermes_api_server.idempotency import TurnKeys
    from hermes_api_server.kernel_records import KernelApiRecords
    from hermes_api_server.pool import SessionPool
    from hermes_api_server.runs import RunManager
    from hermes_api_server.state import ServerState
    from hermes_core import __version__

    store = KernelApiRecords(
        kernel,
        settings.responses_max_stored,
        settings.run_status_retention_s,
        settings.chat_index_ttl_s,
        shared_bus=shared_bus,
    )
    await store.open()
    pool = SessionPool(kernel, data_dir / "workspaces", settings.approval_profile, workspace)
    state = ServerState(
        kernel=kernel,
        settings=settings,
        keyring=keyring,
        data_dir=data_dir,
        version=__version__,
        pool=pool,
        store=store,
        runs=None,  # type: ignore[arg-type]
        idempotency=TurnKeys(store),
        chat_index=ChatIndex(store, settings.chat_index_ttl_s, settings.chat_index_max_entries),
    )
    state.runs = RunManager(state)
    from hermes_api_server.session_owners import SessionOwners
    from hermes_core import AccessKeys

    state.access_keys = AccessKeys(kernel.records)
    pool.owners = SessionOwners(kernel.records)
    if settings.browser_control.enabled:
        from hermes_api_server.browser_control import BrowserHub, install_tools

        state.browser = BrowserHub()
        pool.browser = state.browser
        pool.browser_tools = install_tools(kernel, state.browser, settings.browser_control.developer_mode)
    return state


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


async def _run(state: ServerState) -> int:
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
            _say(f"Error: port {settings.port} is already in use")
            return 1
        _say(f"Error: cannot listen on {settings.host}:{settings.port}: {exc}")
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
        _say(f"restarting the process on port {port} after an injected restart")
        exec_at_exit(sys.argv, "--port", str(port), delay_ms)
        stop.set()

    state.restart_listener = restart
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    # Everything made so far (modules, plugins, the app) lives as long as the server: take it
    # out of the cyclic collector's reach. Otherwise each full collection walks it all again
    # and stalls the event loop for tens of milliseconds under load.
    gc.freeze()
    _say(f"Hermes API server listening on http://{host}:{port}/v1")
    if state.keyring.configured:
        _say("API key: configured")
    else:
        _say(f"API key: generated; read it from {state.keyring.path} (or run: hermes api --show-key)")
    _say(workspace_banner(state))
    for line in await backends_banner(state):
        _say(line)
    if settings.console:
        _say(f"Console: http://{host}:{port}/console (sign in with the API key)")
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
            _say("second signal: exiting now")
            import os

            os._exit(1)
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    try:
        await stop.wait()
        _say("draining: finishing in-flight turns")
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
