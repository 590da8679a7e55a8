"""``hermes keys create|list|revoke``: scoped, tenant-bound keys for ``hermes api`` and
``hermes tui --ws``, kept in the configured storage (docs/reference/api-server.md#managing-keys).

The keys live in the kernel's records (``api.keys``), so with a PostgreSQL storage every instance
sharing the database honours a new key, and a revocation, within a second.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from hermes_cli import event_loop
from hermes_cli.failures import guarded
from hermes_cli.state import CliState, get_state
from hermes_cli.tables import format_table


def _with_keys(state: CliState, work: Any) -> Any:
    from hermes_core import AccessKeys

    kernel = state.kernel
    kernel.configure(state.store.load())

    async def go() -> Any:
        async with kernel.running():
            return await work(AccessKeys(kernel.records))

    return event_loop.run(go())


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "never"
    return dt.datetime.fromtimestamp(stamp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@click.group("keys")
def keys_group() -> None:
    """Create, list and revoke scoped API keys (stored, never shown again)."""


@keys_group.command("create")
@click.option("--tenant", default="default", show_default=True, help="The tenant the key acts for.")
@click.option(
    "--scope",
    "scopes",
    required=True,
    help="Comma-separated subset of observe,control,approve,admin.",
)
@click.option("--expires", default=None, help="Lifetime: 30d, 12h, 45m, 90s or 2w (default: never).")
@click.pass_context
def create_command(ctx: click.Context, tenant: str, scopes: str, expires: str | None) -> None:
    """Create a key and print its secret once."""
    from hermes_core import InvalidValue, parse_duration, parse_scopes

    state = get_state(ctx)

    def body() -> int:
        try:
            wanted = parse_scopes(scopes)
            ttl_s = parse_duration(expires) if expires is not None else None
        except InvalidValue as exc:
            raise click.UsageError(str(exc)) from None
        secret, info = _with_keys(state, lambda keys: keys.create(tenant, wanted, ttl_s))
        click.echo(secret)
        click.echo(
            f"created key {info.id} for tenant {info.tenant} ({','.join(info.scopes)}), "
            f"expires {_when(info.expires_at)}; the secret above is not shown again",
            err=True,
        )
        return 0

    ctx.exit(guarded(body))


@keys_group.command("list")
@click.option("--tenant", default=None, help="Only this tenant's keys.")
@click.pass_context
def list_command(ctx: click.Context, tenant: str | None) -> None:
    """List keys: id, tenant, scopes, expiry (never a secret)."""
    state = get_state(ctx)

    def body() -> int:
        found = _with_keys(state, lambda keys: keys.list(tenant))
        if not found:
            click.echo("no keys")
            return 0
        rows = [[k.id, k.tenant, ",".join(k.scopes), _when(k.created_at), _when(k.expires_at)] for k in found]
        click.echo(format_table(["ID", "TENANT", "SCOPES", "CREATED", "EXPIRES"], rows))
        return 0

    ctx.exit(guarded(body))


@keys_group.command("revoke")
@click.argument("key_id")
@click.pass_context
def revoke_command(ctx: click.Context, key_id: str) -> None:
    """Revoke a key; every instance refuses it within a second."""
    state = get_state(ctx)

    def body() -> int:
        if not _with_keys(state, lambda keys: keys.revoke(key_id)):
            click.echo(f"Error: no key {key_id!r}", err=True)
            return 1
        click.echo(f"revoked {key_id}")
        return 0

    ctx.exit(guarded(body))
