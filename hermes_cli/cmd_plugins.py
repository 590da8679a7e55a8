"""``hermes plugins``: every plugin with its version, distribution, hooks and load failure."""

from __future__ import annotations

import click

from hermes_cli.failures import guarded
from hermes_cli.state import get_state
from hermes_cli.tables import format_table


@click.command("plugins")
@click.pass_context
def plugins_command(ctx: click.Context) -> None:
    """List plugins: name, version, distribution, hooks provided and any load failure."""
    state = get_state(ctx)

    def body() -> int:
        registry = state.kernel.registry
        rows = []
        for record in registry.plugins:
            hooks = ", ".join(h.removeprefix("hermes_") for h in record.hooks) or "-"
            status = f"FAILED: {record.failed}" if record.failed else "ok"
            rows.append([record.name, record.version or "-", record.distribution or "-", hooks, status])
        if not rows:
            click.echo("no plugins loaded")
            return 0
        click.echo(format_table(["NAME", "VERSION", "DISTRIBUTION", "HOOKS", "STATUS"], rows))
        return 0

    ctx.exit(guarded(body))
