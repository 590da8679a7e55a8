"""Start-up of ``hermes api``: the settings checks, ``--show-key``, the key and the bind guard,
the workspace, the run bus and the server state, then :func:`hermes_api_server.lifetime.run`
serves it (docs/reference/api-server.md#start-up-and-settings)."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_api_server.keys import KeyFileError, KeyRing, is_loopback, read_or_create_key
from hermes_api_server.lifetime import run, say
from hermes_api_server.runs_control import on_control

if TYPE_CHECKING:
    from hermes_api_server.settings import ApiSettings
    from hermes_api_server.state import ServerState
    from hermes_core import Kernel, TransportContext

log = logging.getLogger("hermes.api")
EXIT_USAGE = 2


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
            say(f"Error: {exc}")
            return EXIT_USAGE
        print(key, flush=True)
        return 0
    for alias, target in settings.model_aliases.items():
        try:
            await kernel.resolve_model(target)
        except Exception as exc:
            say(f"Error: invalid [api_server] settings: model_aliases.{alias}: {exc}")
            return EXIT_USAGE
    try:
        workspace = resolve_workspace(settings.workspace)
    except ValueError as exc:
        say(f"Error: invalid [api_server] settings: workspace: {exc}")
        return EXIT_USAGE
    if not is_loopback(settings.host) and not settings.configured_keys:
        say(
            f"Error: Refusing to listen on {settings.host}: set API_SERVER_KEY (or api_server.key) first; "
            "the generated key is for loopback use only."
        )
        return EXIT_USAGE
    try:
        keyring = keyring_for(settings, data_dir)
    except KeyFileError as exc:
        say(f"Error: {exc}")
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
        say(f"Error: {exc}")
        return 1
    state = await _build_state(kernel, settings, keyring, data_dir, workspace, shared_bus=bus.shared)
    try:
        await bus.start(functools.partial(on_control, state), state.runs)
    except ConnectionError as exc:
        say(f"Error: {exc}")
        await state.store.close()
        return 1
    state.runs.bus = bus
    # After the bus is up: with shared records it tells runs of live instances from left-overs.
    await state.runs.reconcile_after_restart()
    return await run(state)


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
