"""The root click group: built-in commands imported on demand, plugin transports built on demand.

Listing the commands (``hermes --help``) reads entry-point names from package metadata and
imports no plugin, no stevedore and no command module; the text comes from
:mod:`hermes_cli.root_help`.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from hermes_cli.main import version_line
from hermes_cli.root_help import (
    BUILTINS,
    DESCRIPTION,
    MODEL_HELP,
    NO_PLUGIN_HELP,
    PLUGIN_HELP,
    RECORD_HELP,
    TUI_HELP,
    VERSION_HELP,
    WITH_PLUGIN_HELP,
    plugin_commands,
    render_root_help,
)


def _flags(ctx: click.Context) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    params = ctx.find_root().params
    return (
        tuple(params.get("plugin") or ()),
        tuple(params.get("no_plugin") or ()),
        tuple(params.get("with_plugin") or ()),
    )


class HermesGroup(click.Group):
    """A group whose built-in commands load lazily and whose other commands are transports."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*BUILTINS, *plugin_commands(*_flags(ctx)).transports]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        builtin = BUILTINS.get(cmd_name)
        if builtin is not None:
            module_name, attr, _ = builtin
            command: click.Command = getattr(importlib.import_module(module_name), attr)
            return command
        from hermes_cli.cmd_transport import transport_command

        return transport_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # Transport lookups may load plugins; click's fallback retries with a normalised name,
        # which would load them twice, so resolve once and report unknown names ourselves.
        cmd_name = click.utils.make_str(args[0])
        cmd = self.get_command(ctx, cmd_name)
        if cmd is None and not ctx.resilient_parsing:
            if cmd_name.startswith("-"):
                self.parse_args(ctx, args)
            ctx.fail(f"No such command {cmd_name!r}.")
        return cmd_name if cmd else None, cmd, args[1:]

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write(render_root_help(plugin_commands(*_flags(ctx))).rstrip("\n"))


def _show_version(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_line())
        ctx.exit(0)


def _tui_misplaced(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
    # `hermes [--plugin NAME …] --tui` is handled in hermes_cli.main before click; anything after
    # --tui ends up here.
    if value and not ctx.resilient_parsing:
        raise click.UsageError("--tui comes last and takes no command: hermes [--plugin NAME ...] --tui")


@click.group(cls=HermesGroup, help=DESCRIPTION, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help=VERSION_HELP,
)
@click.option("--plugin", "plugin", multiple=True, metavar="NAME", help=PLUGIN_HELP)
@click.option("--with-plugin", "with_plugin", multiple=True, metavar="NAME", help=WITH_PLUGIN_HELP)
@click.option("--no-plugin", "no_plugin", multiple=True, metavar="NAME", help=NO_PLUGIN_HELP)
@click.option("--model", "model", metavar="REF", help=MODEL_HELP)
@click.option("--record", "record", metavar="DIR", help=RECORD_HELP)
@click.option(
    "--tui", is_flag=True, expose_value=False, is_eager=True, callback=_tui_misplaced, help=TUI_HELP
)
@click.pass_context
def cli(
    ctx: click.Context,
    plugin: tuple[str, ...],
    with_plugin: tuple[str, ...],
    no_plugin: tuple[str, ...],
    model: str | None,
    record: str | None,
) -> None:
    import os

    from hermes_cli.state import get_state

    # A root flag is its environment variable, so every command (and every child process the
    # command starts, such as the Ink TUI's gateway) sees it the same way.
    if model:
        os.environ["HERMES_MODEL"] = model
    if record:
        os.environ["HERMES_RECORD_DIR"] = os.path.abspath(record)
    get_state(ctx)
