"""``hermes <transport>``: a click command built from a plugin's ``TransportSpec``.

Start order (docs/plugin-hooks.md#hermes_transports): argv is parsed, plugins are loaded and
registered, the factory is called at once, and a background task validates the settings and
enters ``kernel.running()``, resolving ``ctx.ready`` (or failing it with the start-up error).
The factory's return value is the exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from hermes_cli import event_loop, startup_gc
from hermes_cli.failures import guarded
from hermes_cli.state import CliState, get_state

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.records import OptionSpec, TransportContext, TransportSpec

log = logging.getLogger("hermes.cli")
EXIT_TERMINATED = 128 + signal.SIGTERM
_CLICK_TYPES: dict[str, Any] = {"str": click.STRING, "int": click.INT, "float": click.FLOAT}


def _param_name(option: OptionSpec) -> str:
    return "opt_" + option.name.replace("-", "_")


def _flag(option: OptionSpec) -> str:
    return "--" + option.name.replace("_", "-")


def build_option(option: OptionSpec) -> click.Option:
    """Turn a click-free :class:`OptionSpec` into a click option.

    Options bound to a settings field get no click default, so an absent flag leaves the
    field to the environment, ``config.toml`` or the model default.
    """
    bound = option.field is not None
    kwargs: dict[str, Any] = {"help": option.help, "multiple": option.multiple}
    decls = [_flag(option)]
    if option.type == "bool":
        if bound:
            decls = [f"{_flag(option)}/--no-{option.name.replace('_', '-')}"]
            kwargs["default"] = None
        else:
            kwargs["is_flag"] = True
            kwargs["default"] = bool(option.default)
    else:
        if isinstance(option.type, tuple):
            kwargs["type"] = click.Choice(list(option.type))
        elif option.type == "path":
            kwargs["type"] = click.Path(path_type=Path)
        else:
            kwargs["type"] = _CLICK_TYPES[option.type]
        if not bound and option.default is not None:
            kwargs["default"] = option.default
            kwargs["show_default"] = True
    return click.Option([*decls, _param_name(option)], **kwargs)


def _given(ctx: click.Context, option: OptionSpec) -> bool:
    return ctx.get_parameter_source(_param_name(option)) == ParameterSource.COMMANDLINE


def split_values(
    ctx: click.Context, spec: TransportSpec, values: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Sort parsed values into ``ctx.options``, flag values for fields, and field defaults.

    :raises click.UsageError: two options of one ``group`` were given.
    """
    groups: dict[str, list[OptionSpec]] = {}
    for option in spec.options:
        if option.group and _given(ctx, option):
            groups.setdefault(option.group, []).append(option)
    for members in groups.values():
        if len(members) > 1:
            names = " and ".join(_flag(m) for m in members)
            raise click.UsageError(f"{names} cannot be used together", ctx)
    options: dict[str, Any] = {}
    field_flags: dict[str, Any] = {}
    field_defaults: dict[str, Any] = {}
    for option in spec.options:
        value = values.get(_param_name(option))
        if option.multiple:
            value = list(value or ())
        if option.field is None:
            options[option.name] = value
        elif _given(ctx, option):
            field_flags[option.field] = value
        elif option.default is not None:
            field_defaults[option.field] = option.default
    return options, field_flags, field_defaults


def core_overrides(ctx: click.Context, spec: TransportSpec, values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the core settings (dotted name → value) the transport always sets, then those set
    by the flags given and true."""
    found: dict[str, Any] = dict(spec.core)
    for option in spec.options:
        if option.core and _given(ctx, option) and values.get(_param_name(option)):
            found.update(option.core)
    return found


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
                    asyncio.get_running_loop().call_soon(startup_gc.settle)
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
        return int(code or 0)


def make_command(state: CliState, spec: TransportSpec) -> click.Command:
    """Build the click command for one transport."""

    @click.pass_context
    def callback(ctx: click.Context, **values: Any) -> None:
        options, field_flags, field_defaults = split_values(ctx, spec, values)
        run = TransportRun(
            state, spec, options, field_flags, field_defaults, core_overrides(ctx, spec, values)
        )

        def check() -> None:
            from hermes_cli.scenario_check import check_settings

            check_settings(state.store.load())

        guarded(check)
        ctx.exit(guarded(lambda: event_loop.run(run.run())))

    params: list[click.Parameter] = [build_option(o) for o in spec.options]
    return click.Command(
        spec.name, params=params, callback=callback, help=spec.summary, short_help=spec.summary
    )


def transport_command(ctx: click.Context, name: str) -> click.Command | None:
    """Load plugins and return the command of transport ``name``.

    :raises click.UsageError: ``name`` is an installed plugin that provides no transport.
    :returns: None when no plugin of that name exists.
    """
    from hermes_cli.entry_points import installed_plugins

    state = get_state(ctx)
    kernel = guarded(lambda: state.kernel)
    spec = kernel.registry.transports.get(name)
    if spec is not None:
        return make_command(state, spec)
    transports = ", ".join(sorted(kernel.registry.transports)) or "none installed"
    record = kernel.registry.plugin(name)
    if record is not None and record.failed:
        raise click.UsageError(
            f"plugin {name!r} failed to load: {record.failed}; transports: {transports}", ctx
        )
    if name in installed_plugins():
        if record is None:
            message = (
                f"plugin {name!r} is not loaded (see HERMES_PLUGINS, HERMES_DISABLE_PLUGINS, --no-plugin)"
            )
        else:
            owned = kernel.registry.owners.items()
            own = sorted(t for (kind, t), owner in owned if kind == "transports" and owner == name)
            message = (
                f"plugin {name!r} provides the command(s): {', '.join(own)}"
                if own
                else f"plugin {name!r} provides no transport"
            )
        raise click.UsageError(f"{message}; transports: {transports}", ctx)
    if ctx.resilient_parsing:
        return None
    raise click.UsageError(f"no such command {name!r}; transports: {transports}", ctx)
