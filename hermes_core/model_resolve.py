"""The model resolver: what ``provider:model``, an alias or a bare name stands for
(docs/reference/core.md#providers-and-models, docs/slash-commands.md#model).

A bare name is looked up provider by provider in three tiers: the current provider, then the
other providers that can answer (an API key is configured or none is needed), then the providers
that lack their key. Within a tier an exact id beats an id that is the name after a ``vendor/``
prefix, which beats a family member (:func:`hermes_core.model_family.best_match`). A match that only
the last tier has is refused with :class:`~hermes_core.errors.ModelNeedsKey`, which names the key to
set, unless the caller asks for any provider (the configured default model at start-up).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from hermes_core import model_family
from hermes_core.errors import ModelAmbiguous, ModelNeedsKey, ModelNotFound
from hermes_core.models import ProviderHub, ResolvedModel
from hermes_core.providers import ModelInfo
from hermes_core.refs import ModelRef

Known = Mapping[str, Sequence[str]]
"""Model ids a caller knows a provider serves although its offline list may not say so (the
models a session has used), by provider name."""


async def resolve(
    hub: ProviderHub,
    aliases: Mapping[str, str],
    ref: str,
    current_provider: str | None,
    *,
    known: Known | None = None,
    runnable_only: bool = True,
    probe_timeout: float | None = None,
) -> ResolvedModel:
    """Resolve a model reference.

    :param aliases: ``model_aliases`` from the settings.
    :param current_provider: the provider of the current model; its ids win every tie.
    :param known: ids to treat as listed, by provider (a session's models).
    :param runnable_only: refuse a bare name that only keyless providers offer
        (:class:`ModelNeedsKey`); False resolves it like any other (the default model).
    :param probe_timeout: when given, a bare name first fetches the current provider's list if it
        is a user-defined endpoint this process has never asked (the catalog's policy on open).
    :raises ModelNotFound: nothing matches; ``candidates`` holds suggestions.
    :raises ModelAmbiguous: several equally good answers.
    """
    ref = ref.strip()
    if not ref:
        raise ModelNotFound(ref, message="empty model reference")
    parsed = ModelRef.parse(ref, hub.has)
    if parsed.provider is not None:
        return await _in_provider(hub, parsed.provider, parsed.model)
    if ref in aliases:
        return await resolve(
            hub, {}, aliases[ref], current_provider, known=known, runnable_only=runnable_only
        )
    current = current_provider if current_provider and hub.has(current_provider) else None
    if probe_timeout is not None and current is not None:
        if hub.is_custom(current) and not hub.asked(current):
            await hub.probe(current, probe_timeout)
    names = hub.names()
    runs = {n: hub.authenticated(n) for n in names}
    first = [current] if current is not None and (runs[current] or not runnable_only) else []
    usable = [n for n in names if runs[n] and n not in first]
    keyless = [n for n in names if not runs[n] and n not in first]
    listed: dict[str, list[ModelInfo]] = {}
    tiers = [first, usable] if runnable_only else [first, usable, keyless]
    for tier in tiers:
        found = await _match_tier(hub, tier, ref, listed, known or {})
        if found is not None:
            return found
    if runnable_only:
        try:
            found = await _match_tier(hub, keyless, ref, listed, known or {})
        except ModelAmbiguous as tied:
            offers = tied.candidates
        else:
            offers = [found.ref] if found is not None else []
        if offers:
            providers = {ModelRef.split(c).provider or "" for c in offers}
            raise ModelNeedsKey(ref, offers, {p: hub.key_var(p) for p in sorted(providers)})
    raise ModelNotFound(ref, _suggestions(ref, listed, aliases))


async def _ids(
    hub: ProviderHub, name: str, listed: dict[str, list[ModelInfo]], known: Known
) -> list[ModelInfo]:
    """Return (and remember) a provider's offline list plus the ids ``known`` adds to it."""
    if name not in listed:
        models = await hub.offline_models(name)
        seen = {m.id for m in models}
        extra = [ModelInfo(i) for i in dict.fromkeys(known.get(name, ())) if i not in seen]
        listed[name] = models + extra
    return listed[name]


async def _match_tier(
    hub: ProviderHub, tier: Sequence[str], ref: str, listed: dict[str, list[ModelInfo]], known: Known
) -> ResolvedModel | None:
    """Return the best match of ``ref`` among the providers of one tier, or None.

    :raises ModelAmbiguous: the best rank is reached by several ids (one provider or several).
    """
    best: int | None = None
    hits: list[tuple[str, list[str]]] = []
    for name in tier:
        models = await _ids(hub, name, listed, known)
        match = model_family.best_match(ref, [m.id for m in models])
        if match is None:
            continue
        rank, ids = match
        if best is None or rank < best:
            best, hits = rank, [(name, ids)]
        elif rank == best:
            hits.append((name, ids))
    if not hits:
        return None
    if len(hits) == 1 and len(hits[0][1]) == 1:
        name, (model_id,) = hits[0]
        info = next((m for m in listed[name] if m.id == model_id), None)
        return ResolvedModel(name, model_id, info)
    raise ModelAmbiguous(ref, [f"{name}:{i}" for name, ids in hits for i in ids])


def _suggestions(ref: str, listed: Mapping[str, list[ModelInfo]], aliases: Mapping[str, str]) -> list[str]:
    everything = [f"{n}:{i.id}" for n, models in listed.items() for i in models]
    containing = [e for e in everything if ref.lower() in ModelRef.split(e).model.lower()]
    close = difflib.get_close_matches(ref, everything + list(aliases), n=5, cutoff=0.5)
    return (containing + [c for c in close if c not in containing])[:5]


async def _in_provider(hub: ProviderHub, provider: str, model: str) -> ResolvedModel:
    """Resolve ``provider:model``: listed ids carry their details; a provider with a closed list
    refuses ids it does not list."""
    if not model:
        raise ModelNotFound(f"{provider}:", message=f"no model named after '{provider}:'")
    listed = await hub.offline_models(provider)
    for info in listed:
        if info.id == model:
            return ResolvedModel(provider, model, info)
    spec = hub.spec(provider)
    if any(model.startswith(prefix) for prefix in spec.model_prefixes):
        return ResolvedModel(provider, model, None)
    if listed and not spec.open_model_list:
        close = difflib.get_close_matches(model, [m.id for m in listed], n=5, cutoff=0.3)
        raise ModelNotFound(
            f"{provider}:{model}",
            [f"{provider}:{c}" for c in close] or [f"{provider}:{m.id}" for m in listed],
        )
    return ResolvedModel(provider, model, None)


def needs_key(hub: ProviderHub, resolved: ResolvedModel, requested: str) -> ModelNeedsKey | None:
    """Return the refusal for a model whose provider cannot answer for want of its key, or None.

    :param requested: what the caller asked for, quoted in the message.
    """
    hint = hub.missing_key_hint(resolved.provider)
    if hint is None:
        return None
    return ModelNeedsKey(
        requested,
        [resolved.ref],
        {resolved.provider: hub.key_var(resolved.provider)},
        message=f"cannot use {resolved.ref}: {hint}",
    )
