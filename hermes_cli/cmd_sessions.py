"""``hermes sessions list|show``: read stored sessions without taking their lease."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from hermes_cli import event_loop
from hermes_cli.failures import guarded
from hermes_cli.state import CliState, get_state
from hermes_cli.tables import format_table


def _when(timestamp: float) -> str:
    if not timestamp:
        return "-"
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def _one_line(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _with_kernel(state: CliState, work: Any) -> Any:
    kernel = state.kernel
    kernel.configure(state.store.load())

    async def go() -> Any:
        async with kernel.running():
            return await work(kernel)

    return event_loop.run(go())


@click.group("sessions")
def sessions_group() -> None:
    """List and show stored sessions."""


@sessions_group.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many to show.")
@click.pass_context
def list_command(ctx: click.Context, limit: int) -> None:
    """List sessions, most recently active first."""
    state = get_state(ctx)

    def body() -> int:
        page = _with_kernel(state, lambda kernel: kernel.sessions.list(limit=limit))
        if not page.sessions:
            click.echo("no sessions")
            return 0
        rows = [
            [s.id, _when(s.updated_at), s.source, str(s.message_count), _one_line(s.title or "")]
            for s in page.sessions
        ]
        click.echo(format_table(["ID", "UPDATED", "SOURCE", "MESSAGES", "TITLE"], rows))
        return 0

    ctx.exit(guarded(body))


def _render_row(row: Any) -> list[str]:
    role = row.role
    if role == "tool":
        head = f"[tool {row.tool_name or ''}]".replace(" ]", "]")
        body = row.content.strip().splitlines()
        return [f"{head} {_one_line(body[0], 200) if body else ''}".rstrip()]
    from hermes_core import cut_off_reason

    cut = cut_off_reason(row)  # the reply stopped early: say so, as the other surfaces do
    lines = [f"[{role} (cut off: {cut})]" if cut else f"[{role}]"]
    if row.content:
        lines.extend("  " + line for line in row.content.splitlines())
    for call in getattr(row, "tool_calls", ()) or ():
        lines.append(f"  → {call.name} {_one_line(call.arguments, 160)}")
    return lines


@sessions_group.command("show")
@click.argument("session_id", metavar="ID")
@click.pass_context
def show_command(ctx: click.Context, session_id: str) -> None:
    """Show one session: its details, then its messages."""
    state = get_state(ctx)

    def body() -> int:
        stored = _with_kernel(state, lambda kernel: kernel.sessions.stored(session_id))
        record, rows = stored.record, stored.rows
        details = [
            ("id", record.id),
            ("title", record.title or "-"),
            ("source", record.source),
            ("cwd", record.cwd),
            ("model", record.model or "-"),
            ("profile", record.profile),
            ("created", _when(record.created_at)),
            ("updated", _when(record.updated_at)),
        ]
        if record.parent_session_id:  # a delegated child or a branch: say whose
            details.insert(1, ("parent", record.parent_session_id))
        for key, value in details:
            click.echo(f"{key + ':':9}{value}")
        click.echo("")
        for row in rows:
            for line in _render_row(row):
                click.echo(line)
        return 0

    ctx.exit(guarded(body))
