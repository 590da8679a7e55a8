"""``hermes <transport>``: a click command built from a plugin's ``TransportSpec``.

The command parses its options and hands them to :class:`hermes_cli.transport_run.TransportRun`,
which calls the factory and starts the kernel behind it (the start order is described there).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from hermes_cli import event_loop
from hermes_cli.failures import guarded
from hermes_cli.state import CliState, get_state
from hermes_cli.transport_run import EXIT_TERMINATED as EXIT_TERMINATED
from hermes_cli.transport_run import TransportRun
from hermes_cli.transport_run import apply_overrides as apply_overrides

if TYPE_CHECKING:
    from hermes_core.records import OptionSpec, TransportSpec

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
