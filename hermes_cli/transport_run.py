"""Run a transport: its factory in front, the kernel's start-up in a background task.

Start order (docs/plugin-hooks.md#hermes_transports): argv is parsed, plugins are loaded and
registered, the factory is called at once, and a background task validates the settings and
enters ``kernel.running()``, resolving ``ctx.ready`` (or failing it with the start-up error).
The factory's return value is the exit code.

Nothing here needs click: :mod:`hermes_cli.cmd_transport` turns a transport into a click
command that ends here, and :func:`run_plain` runs a transport given no options without click
at all (``hermes tui`` on stdio, as ``hermes chat`` spawns it; see :mod:`hermes_cli.main`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_cli import event_loop, server_gc, startup_gc
from hermes_cli.state import CliState

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.records import OptionSpec, TransportContext, TransportSpec

log = logging.getLogger("hermes.cli")
EXIT_TERMINATED = 128 + signal.SIGTERM
#: How long after the kernel is up a transport remembers its plugins' commands for ``hermes
#: --help`` (hermes_cli/command_cache.py): past a host's first request, or at exit if sooner.
REMEMBER_AFTER_S = 1.0


def apply_overrides(core_raw: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Set dotted names in the raw core mapping, making tables on the way (in place)."""
    for dotted, value in overrides.items():
        *tables, leaf = dotted.split(".")
        target = core_raw
        for name in tables:
            child = target.get(name)
            if not isinstance(child, dict):
                child = target[name] = {}
            target = child
        target[leaf] = value


class TransportRun:
    """Drives one transport: the factory in front, start-up in a background task."""

    def __init__(
        self,
        state: CliState,
        spec: TransportSpec,
        options: dict[str, Any],
        field_flags: dict[str, Any],
        field_defaults: dict[str, Any],
        core_flags: Mapping[str, Any] | None = None,
    ) -> None:
        self.state = state
        self.core_flags = dict(core_flags or {})
        self.spec = spec
        self.options = options
        self.field_flags = field_flags
        self.field_defaults = field_defaults
        self.kernel: Kernel = state.kernel

    def _settings(self) -> tuple[dict[str, Any], Any]:
        """Re-read files and environment: the core mapping and the validated transport settings."""
        from hermes_cli.settings_loader import transport_raw, validate_transport_settings

        store = self.state.store
        core_raw = store.load()
        apply_overrides(core_raw, self.core_flags)
        raw = transport_raw(self.spec, core_raw, store.environment(), self.field_flags)
        for field, default in self.field_defaults.items():
            raw.setdefault(field, default)
        return core_raw, validate_transport_settings(self.spec, raw)

    def _remember(self) -> None:
        with contextlib.suppress(Exception):  # a cache: a failed write costs a slower --help
            self.state.remember_commands()

    async def _reload(self, ctx: TransportContext) -> Any:
        core_raw, settings = self._settings()
        await self.kernel.apply_settings(core_raw)
        ctx.settings = settings
        return settings

    async def _start(self, ctx: TransportContext, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        # Let the factory's first step run before any start-up work.
        await asyncio.sleep(0)
        try:
            core_raw, settings = self._settings()
            self.kernel.configure(core_raw)
            async with self.kernel.running():
                ctx.settings = settings
                if not ready.done():
                    ready.set_result(None)
                    # After the factory's next step (a gateway builds its tables there).
                    loop = asyncio.get_running_loop()
                    loop.call_soon(self._settle)
                    loop.call_later(REMEMBER_AFTER_S, self._remember)
                await stop.wait()
        except asyncio.CancelledError:
            startup_gc.settle()
            if not ready.done():
                ready.cancel()
            raise
        except Exception as exc:
            startup_gc.settle()
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.error("transport %s: kernel failed: %s", self.spec.name, exc)

    def _settle(self) -> None:
        """Start-up is over: freeze what it made; a server also gets its collector policy."""
        startup_gc.settle()
        if self.spec.long_running:
            server_gc.apply()

    async def run(self) -> int:
        """Call the factory at once, start the kernel behind it and return the factory's code."""
        from hermes_core.records import TransportContext

        # Collection stays off until the transport has started (hermes_cli/startup_gc.py).
        startup_gc.pause()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        stop = asyncio.Event()
        ctx: TransportContext[Any] = TransportContext(
            kernel=self.kernel, options=dict(self.options), ready=ready, store=self.state.store
        )

        async def reload_settings() -> Any:
            return await self._reload(ctx)

        ctx.reload_settings = reload_settings
        factory = asyncio.ensure_future(self.spec.factory(ctx))
        starter = asyncio.create_task(self._start(ctx, ready, stop), name=f"hermes-{self.spec.name}-start")
        terminated = False

        def terminate() -> None:
            nonlocal terminated
            terminated = True
            factory.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, terminate)
        try:
            code = await factory
        except asyncio.CancelledError:
            if not terminated:
                raise
            code = EXIT_TERMINATED
        finally:
            stop.set()
            if not ready.done():
                starter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starter
            if ready.done() and not ready.cancelled():
                ready.exception()  # the factory may not have looked; keep asyncio quiet
            self._remember()
        return int(code or 0)


def _plain_value(option: OptionSpec) -> tuple[bool, Any]:
    """Return what click would hand over for an option not given: ``(known, value)``.

    Only the defaults that need no conversion by click's types are known here (none, a flag's
    bool); any other default sends the command through click.
    """
    if option.multiple:
        return option.default is None, []
    if option.type == "bool" and option.field is None:
        return True, bool(option.default)
    return option.default is None, None


def plain_run(state: CliState, spec: TransportSpec) -> TransportRun | None:
    """Build the run of ``spec`` given no options, exactly as the click command would.

    :returns: None when an option's default needs click's conversion (then click runs it).
    """
    options: dict[str, Any] = {}
    for option in spec.options:
        known, value = _plain_value(option)
        if not known:
            return None
        if option.field is None:
            options[option.name] = value
    return TransportRun(state, spec, options, {}, {}, dict(spec.core))


def run_plain(state: CliState, name: str) -> int | None:
    """Run transport ``name`` with no options and no root flags, without importing click.

    The same steps as the click command of :mod:`hermes_cli.cmd_transport`: load the plugins,
    check the scenario settings, run the transport. Failures end as there (an error line and
    ``SystemExit``).

    :param state: the invocation's state; when None is returned, the click command goes on
        with it (the plugins are not loaded twice).
    :returns: the exit code, or None when the command is not one to run this way (nothing has
        been printed then, and the click command runs it as usual).
    """
    from hermes_cli.failures import from_click, guarded

    state.defer_remember = True  # TransportRun remembers once the transport is up
    kernel = guarded(lambda: state.kernel)
    spec = kernel.registry.transports.get(name)
    run = None if spec is None else plain_run(state, spec)
    if run is None:  # click says why, or converts the options (hermes_cli.cmd_transport)
        state.remember_commands()
        return None

    def check() -> None:
        from hermes_cli.scenario_check import check_settings

        check_settings(state.store.load())

    guarded(check)
    try:
        return guarded(lambda: event_loop.run(run.run()))
    except Exception as exc:
        if not from_click(exc):
            raise
        exc.show()  # type: ignore[attr-defined]  # a ClickException: what click's main prints
        return int(getattr(exc, "exit_code", 1))
