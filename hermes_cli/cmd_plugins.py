"""``hermes plugins``: every plugin with its version, distribution, hooks and load failure.

The table always shows every selected plugin (strict mode does not cut it short), and the exit
status is 1 when any of them failed, so scripts and CI can check an installation. With
``HERMES_DEBUG`` set, each failure's traceback follows on stderr. Configured tool servers (MCP)
follow the plugin table, with their state.
"""

from __future__ import annotations

import os
from typing import Any

import click

from hermes_cli import event_loop
from hermes_cli.failures import EXIT_FAILURE, error_line, guarded
from hermes_cli.state import get_state
from hermes_cli.tables import format_table


@click.command("plugins")
@click.option(
    "--check",
    is_flag=True,
    help="Print only the plugins that failed (nothing when all loaded); the exit status is the same.",
)
@click.pass_context
def plugins_command(ctx: click.Context, check: bool) -> None:
    """List plugins: name, version, distribution, hooks provided and any load failure.

    Exits 1 when a plugin failed to load; set HERMES_DEBUG=1 to see each failure's traceback.
    """
    state = get_state(ctx)
    state.lenient = True  # show every failure in the table, strict mode or not

    def body() -> int:
        registry = state.kernel.registry
        failed = [record for record in registry.plugins if record.failed]
        rows = []
        for record in failed if check else registry.plugins:
            hooks = ", ".join(h.removeprefix("hermes_") for h in record.hooks) or "-"
            status = f"FAILED: {record.failed}" if record.failed else "ok"
            rows.append([record.name, record.version or "-", record.distribution or "-", hooks, status])
        if rows:
            click.echo(format_table(["NAME", "VERSION", "DISTRIBUTION", "HOOKS", "STATUS"], rows))
        elif not check:
            click.echo("no plugins loaded")
        raw = state.store.load()
        if not check and raw.get("mcp_servers"):
            click.echo("")
            click.echo(_servers_table(state.kernel, raw))
        if not failed:
            return 0
        if os.environ.get("HERMES_DEBUG"):
            for record in failed:
                if record.traceback:
                    click.echo(f"--- {record.name} ---\n{record.traceback.rstrip()}", err=True)
        names = ", ".join(record.name for record in failed)
        traced = any(record.traceback for record in failed)
        debug = bool(os.environ.get("HERMES_DEBUG"))
        hint = "; set HERMES_DEBUG=1 for the tracebacks" if traced and not debug else ""
        error_line(f"{len(failed)} plugin(s) failed to load: {names}{hint}")
        return EXIT_FAILURE

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
    rows = [[s.name, s.source, s.transport, s.state, str(s.tools), _problems(s)] for s in servers]
    return format_table(["SERVER", "SOURCE", "TRANSPORT", "STATE", "TOOLS", "ERROR"], rows)


def _problems(server: Any) -> str:
    """The error column: the server's error and the tools it lost to a name clash."""
    left = f"left out (name taken): {', '.join(server.left_out)}" if server.left_out else ""
    return "; ".join(part for part in (server.error, left) if part) or "-"
