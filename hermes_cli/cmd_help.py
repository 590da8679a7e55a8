"""``hermes help [COMMAND]``: the root help, or one command's help."""

from __future__ import annotations

import click


@click.command("help")
@click.argument("command", required=False)
@click.pass_context
def help_command(ctx: click.Context, command: str | None) -> None:
    """Show the help of hermes, or of one COMMAND."""
    root = ctx.find_root()
    group = root.command
    if not command or not isinstance(group, click.Group):
        click.echo(group.get_help(root))
        return
    target = group.get_command(root, command)
    if target is None:
        raise click.UsageError(f"No such command {command!r}.", ctx)
    with click.Context(target, info_name=command, parent=root) as sub:
        click.echo(target.get_help(sub))
