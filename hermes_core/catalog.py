"""The provider-aware model catalog and its probe policy (docs/reference/core.md#providers-and-models).

A normal call probes live only the current provider, and only when it is a custom one; others
come from the cache, and stale entries refresh in the background. ``refresh`` empties the cache
and probes every custom provider concurrently. ``network=False`` never waits on the network.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from hermes_core.models import ProviderHub
from hermes_core.providers import ModelInfo
from hermes_core.records import ModelPrice, PriceSource
from hermes_core.refs import ModelRef

log = logging.getLogger("hermes.models")


async def build_catalog(
    hub: ProviderHub,
    *,
    current: str | None,
    refresh: bool,
    network: bool,
    probe_timeout_s: float,
    cache_ttl_s: float,
    background: set[asyncio.Task[None]],
    prices: Sequence[PriceSource] | None = None,
    executor: Executor | None = None,
    known: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Return the catalog payload shared by ``model.options`` and ``/api/model/options``.

    :param current: the current ``provider:model`` reference, if any.
    :param background: a set that keeps background refresh tasks alive.
    :param prices: the price tables to consult (the picker surfaces); None leaves prices out.
    :param executor: where the price lookups run (they may load a large table).
    :param known: model ids each provider is known to serve although its list may not say so
        (the models the session used); they are listed after the provider's own.
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
        listed = {m.id for m in models}
        models += [ModelInfo(i) for i in dict.fromkeys((known or {}).get(name, ())) if i not in listed]
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
    catalog: dict[str, Any] = {
        "model": current_model or None,
        "provider": current_provider or None,
        "refreshed": refresh,
        "providers": providers,
    }
    if prices is not None:
        catalog["pricing_sources"] = await add_prices(hub, providers, prices, executor)
    return catalog


def shown_price(usd_per_mtok: float | None) -> str:
    """Format a price per million tokens the way pickers show it: ``$3.00``, ``free``, or ``""``."""
    if usd_per_mtok is None:
        return ""
    return "free" if usd_per_mtok == 0 else f"${usd_per_mtok:.2f}"


async def add_prices(
    hub: ProviderHub,
    providers: list[dict[str, Any]],
    sources: Sequence[PriceSource],
    executor: Executor | None,
) -> list[str]:
    """Add per-model prices to the catalog rows; return the names of the tables that priced any.

    Each priced model gets ``model_details[id].pricing`` (``input``, ``output``, ``cache_read`` in
    US dollars per million tokens) and its row a ``pricing[id]`` entry formatted for display
    (``input``, ``output``, ``cache``, ``free``). Tables are asked in order and the first that
    prices a model wins; a table that fails is logged and skipped.
    """
    loop = asyncio.get_running_loop()
    wanted = [(row, hub.base_url(row["slug"])) for row in providers if row["models"]]
    used: list[str] = []

    def ask(source: PriceSource) -> list[Mapping[str, ModelPrice]]:
        return [
            source.lookup(
                row["slug"], url, tuple(m for m in row["models"] if m not in row.get("pricing", {}))
            )
            for row, url in wanted
        ]

    for source in sources:
        try:
            answers = await loop.run_in_executor(executor, ask, source)
        except Exception as exc:  # a price table never breaks the picker
            log.warning("price table %s failed: %s", source.name, exc)
            continue
        for (row, _url), found in zip(wanted, answers, strict=True):
            for model_id, price in found.items():
                if model_id not in row["models"] or model_id in row.get("pricing", {}):
                    continue
                details = row["model_details"].setdefault(model_id, {})
                details["pricing"] = {
                    "input": price.input,
                    "output": price.output,
                    "cache_read": price.cache_read,
                }
                row.setdefault("pricing", {})[model_id] = {
                    "input": shown_price(price.input),
                    "output": shown_price(price.output),
                    "cache": shown_price(price.cache_read) or None,
                    "free": price.input == 0 and price.output in (0, None),
                }
                if source.name not in used:
                    used.append(source.name)
    return used
