"""``hermes acp --setup``: pick a provider, model and key in a terminal (acp.md §1.5).

Writes the model to ``config.toml`` and the key to ``.env`` through the settings store. Ctrl-C or
EOF leaves everything untouched (exit 1); a stdin that is not a terminal exits 2 at once.
"""

from __future__ import annotations

import getpass
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import TransportContext


def _ask(prompt: str, default: str | None = None) -> str:
    suffix = f" [{default}]" if default else ""
    answer = input(f"{prompt}{suffix}: ").strip()
    return answer or (default or "")


def _environment(store: Any) -> dict[str, str]:
    """Return the environment the settings store sees (real environment over ``.env``)."""
    reader = getattr(store, "environment", None)
    try:
        return dict(reader()) if callable(reader) else {}
    except Exception:
        return {}


async def _offline_models(ctx: TransportContext, provider: str) -> list[str]:
    """Return the provider's offline model list (empty when the kernel cannot say)."""
    try:
        await ctx.ready
        catalog = await ctx.kernel.model_catalog(network=False)
    except Exception:
        return []
    for entry in catalog.get("providers") or []:
        if entry.get("slug") == provider:
            return [str(m) for m in entry.get("models") or []][:50]
    return []


async def run_setup(ctx: TransportContext) -> int:
    """Run the interactive setup.

    :param ctx: the transport context.
    :returns: 0 written, 1 aborted or failed, 2 stdin is not a terminal.
    """
    if not os.isatty(0):
        print("hermes acp --setup needs a terminal on stdin", file=sys.stderr)
        return 2
    store = ctx.store
    if store is None:
        print("no settings store available", file=sys.stderr)
        return 1
    registry = ctx.kernel.registry
    providers: dict[str, Any] = dict(registry.providers)
    names = sorted(providers)
    current = str(store.get("model") or "")
    current_provider = current.partition(":")[0] or (names[0] if names else "")
    try:
        print("Providers: " + ", ".join(names))
        provider = _ask("Provider", current_provider)
        if provider not in providers:
            print(f"unknown provider {provider!r}", file=sys.stderr)
            return 1
        spec = providers[provider]
        offered = await _offline_models(ctx, provider)
        for index, name in enumerate(offered, start=1):
            print(f"  {index}. {name}")
        model = _ask("Model (number, name or provider:model)", current.partition(":")[2] or None)
        if model.isdigit() and 1 <= int(model) <= len(offered):
            model = offered[int(model) - 1]
        if not model:
            print("no model given", file=sys.stderr)
            return 1
        ref = model if ":" in model else f"{provider}:{model}"
        key_var = next(iter(dict(spec.env_vars).values()), None) if spec.requires_key else None
        key = ""
        if key_var:
            if _environment(store).get(key_var):
                use = _ask(f"{key_var} is set in the environment; use it? (y/n)", "y")
                if not use.lower().startswith("y"):
                    key = getpass.getpass(f"API key ({key_var}): ")
            else:
                key = getpass.getpass(f"API key ({key_var}): ")
        store.set("model", ref)
        if key and key_var:
            store.set_env(key_var, key)
    except (KeyboardInterrupt, EOFError):
        print("\nsetup aborted; nothing was written", file=sys.stderr)
        return 1
    print(f"wrote {store.config_path}")
    if key:
        print(f"wrote {store.env_path}")
    return 0
