"""``hermes plugins``: every plugin with its version, distribution, hooks and load failure, then the
configured tool servers (MCP) with their state."""

from __future__ import annotations

from typing import Any

import click

from hermes_cli import event_loop
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
        raw = state.store.load()
        if raw.get("mcp_servers"):
            click.echo("")
            click.echo(_servers_table(state.kernel, raw))
        return 0

    ctx.exit(guarded(body))


def _servers_table(kernel: Any, raw: Any) -> str:
    """Start the kernel, connect every configured tool server once and tabulate what happened."""

    async def connect() -> list[Any]:
        kernel.configure(raw)
        async with kernel.running():
            return list(await kernel.tool_sources.reload())

    servers = event_loop.run(connect())
    if not servers:
        return "MCP servers: configured, but the mcp plugin is not loaded"
    rows = [[s.name, s.source, s.transport, s.state, str(s.tools), s.error or "-"] for s in servers]
    return format_table(["SERVER", "SOURCE", "TRANSPORT", "STATE", "TOOLS", "ERROR"], rows)
