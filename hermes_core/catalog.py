"""The provider-aware model catalog and its probe policy (docs/reference/core.md#providers-and-models).

A normal call probes live only the current provider, and only when it is a custom one; others
come from the cache, and stale entries refresh in the background. ``refresh`` empties the cache
and probes every custom provider concurrently. ``network=False`` never waits on the network.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_core.models import ProviderHub
from hermes_core.refs import ModelRef


async def build_catalog(
    hub: ProviderHub,
    *,
    current: str | None,
    refresh: bool,
    network: bool,
    probe_timeout_s: float,
    cache_ttl_s: float,
    background: set[asyncio.Task[None]],
) -> dict[str, Any]:
    """Return the catalog payload shared by ``model.options`` and ``/api/model/options``.

    :param current: the current ``provider:model`` reference, if any.
    :param background: a set that keeps background refresh tasks alive.
    """
    current_ref = ModelRef.split(current)
    current_provider, current_model = current_ref.provider or "", current_ref.model
    statuses: dict[str, str] = {}
    if refresh:
        hub.clear_cache()
    if network:
        to_probe = (
            [n for n in hub.names() if hub.is_custom(n)]
            if refresh
            else (
                [current_provider]
                if current_provider and hub.has(current_provider) and hub.is_custom(current_provider)
                else []
            )
        )
        if to_probe:
            await asyncio.gather(*(hub.probe(n, probe_timeout_s) for n in to_probe))
            for name in to_probe:
                statuses[name] = "failed" if hub.probe_state(name).get("error") else "live"
        for name in hub.names():
            age = hub.cache_age(name)
            if name not in statuses and hub.is_custom(name) and age is not None and age > cache_ttl_s:
                task = asyncio.create_task(hub.probe(name, probe_timeout_s))
                background.add(task)
                task.add_done_callback(background.discard)
    providers: list[dict[str, Any]] = []
    for name in hub.names():
        models = await hub.offline_models(name)
        if name not in statuses:
            statuses[name] = "cached" if hub.cache_age(name) is not None else "skipped"
        row: dict[str, Any] = {
            "slug": name,
            "name": hub.spec(name).summary
            if not hub.is_custom_entry(name) and name == hub.spec(name).name
            else name,
            "is_current": name == current_provider,
            "is_user_defined": hub.is_custom(name),
            "authenticated": hub.authenticated(name),
            "requires_key": hub.requires_key(name),
            "has_key": hub.has_key(name),
            "models": [m.id for m in models],
            "total_models": len(models),
            "model_details": {m.id: {"context_window": m.context_window, "vision": m.vision} for m in models},
            "probe": {"status": statuses[name], **hub.probe_state(name)},
        }
        if hub.is_custom(name):
            row["base_url"] = hub.base_url(name)
        providers.append(row)
    return {
        "model": current_model or None,
        "provider": current_provider or None,
        "refreshed": refresh,
        "providers": providers,
    }
