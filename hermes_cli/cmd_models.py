"""``hermes models``: the model catalog (docs/reference/core.md#providers-and-models) as a readable table."""

from __future__ import annotations

from typing import Any

import click

from hermes_cli import event_loop
from hermes_cli.failures import guarded
from hermes_cli.state import get_state
from hermes_cli.tables import format_table


def render_catalog(catalog: dict[str, Any]) -> str:
    """Turn the catalog mapping into text: the current model, then one table row per model.

    :param catalog: ``{model, provider, providers: [{slug, name, models, model_details, probe, …}]}``.
    """
    model, provider_slug = catalog.get("model"), catalog.get("provider")
    current = f"{provider_slug}:{model}" if model and provider_slug else model
    lines = [f"current model: {current or '(none)'}"]
    rows: list[list[str]] = []
    for provider in catalog.get("providers", []):
        slug = str(provider.get("slug", "?"))
        probe = provider.get("probe") or {}
        status = str(probe.get("status", "-"))
        if probe.get("error"):
            status += f" ({probe['error']})"
        if provider.get("has_key"):  # configured, whether or not the provider needs one
            auth = "yes"
        elif provider.get("requires_key") is False:
            auth = "not needed"
        else:
            auth = "yes" if provider.get("authenticated") else "no"
        details = provider.get("model_details") or {}
        models = list(provider.get("models") or [])
        if not models:
            rows.append([" ", slug, "(no models listed)", "-", "-", auth, status])
        for model in models:
            info = details.get(model) or {}
            ref = f"{slug}:{model}"
            mark = "*" if ref == current else " "
            window = info.get("context_window")
            vision = "yes" if info.get("vision") else "no"
            rows.append([mark, slug, model, str(window) if window else "-", vision, auth, status])
    lines.append(format_table([" ", "PROVIDER", "MODEL", "CONTEXT", "VISION", "KEY", "PROBE"], rows))
    return "\n".join(lines)


@click.command("models")
@click.option("--refresh", is_flag=True, help="Empty the cache and probe every custom provider now.")
@click.pass_context
def models_command(ctx: click.Context, refresh: bool) -> None:
    """Show the model catalog: every provider's models, the current one marked with *."""
    state = get_state(ctx)

    async def fetch() -> dict[str, Any]:
        kernel = state.kernel
        async with kernel.running():
            return dict(await kernel.model_catalog(refresh=refresh))

    def body() -> int:
        state.kernel.configure(state.store.load())
        click.echo(render_catalog(event_loop.run(fetch())))
        return 0

    ctx.exit(guarded(body))
