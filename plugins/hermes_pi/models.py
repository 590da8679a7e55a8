"""pi's ``Model`` objects and thinking levels, from Hermes model references and the catalog
(docs/reference/pi.md#models-and-thinking-levels).

A pi model is named by ``provider`` and ``id``; a Hermes reference is ``provider:model``. The
catalog gives each model's context window, whether it sees images and, from the price tables,
its cost in US dollars per million tokens (zero where no table prices it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core import ModelRef
from hermes_pi.messages import api_of

if TYPE_CHECKING:
    from hermes_core import Kernel, Session

#: pi's thinking levels and the reasoning effort each one sets (``max`` is clamped to ``xhigh``).
LEVEL_TO_EFFORT: Mapping[str, str] = {
    "off": "none",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "xhigh",
}
#: The levels offered for every model: Hermes sends the effort where the provider takes it.
LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


def level_of(effort: str | None) -> str:
    """Return the pi thinking level of a reasoning effort (no effort set reads as ``off``)."""
    if effort is None or effort == "none":
        return "off"
    return effort if effort in LEVELS else "off"


def model_object(
    provider: str, model_id: str, details: Mapping[str, Any] | None = None, base_url: str | None = None
) -> dict[str, Any]:
    """Build a pi ``Model`` object.

    :param provider: the Hermes provider name.
    :param model_id: the model id within it.
    :param details: the catalog's ``{context_window, vision}`` for it, if known.
    :param base_url: the endpoint of a custom provider.
    """
    details = details or {}
    window = details.get("context_window") or 0
    price = details.get("pricing") or {}
    return {
        "id": model_id,
        "name": model_id,
        "api": api_of(provider),
        "provider": provider,
        "baseUrl": base_url or "",
        "reasoning": True,
        "input": ["text", "image"] if details.get("vision") else ["text"],
        "contextWindow": int(window),
        "maxTokens": 0,
        "cost": {
            "input": price.get("input") or 0,
            "output": price.get("output") or 0,
            "cacheRead": price.get("cache_read") or 0,
            "cacheWrite": 0,
        },
    }


class ModelCatalog:
    """The models pi's ``get_available_models`` lists: those of providers that can answer."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel

    async def available(self, session: Session | None = None) -> list[dict[str, Any]]:
        """Return a ``Model`` object for every model of every usable provider (no network)."""
        catalog = await self._kernel.models.catalog(network=False, session=session, prices=True)
        out: list[dict[str, Any]] = []
        for row in catalog.get("providers", []):
            if not row.get("authenticated"):
                continue
            details = row.get("model_details") or {}
            for model_id in row.get("models", []):
                out.append(model_object(row["slug"], model_id, details.get(model_id), row.get("base_url")))
        return out

    async def current(self, session: Session) -> dict[str, Any] | None:
        """Return the ``Model`` object of ``session``'s model, or None when it has none."""
        ref, _ = self._kernel.models.for_session(session)
        if not ref:
            return None
        split = ModelRef.split(ref)
        if not split.provider:
            return None
        catalog = await self._kernel.models.catalog(network=False, session=session, prices=True)
        for row in catalog.get("providers", []):
            if row.get("slug") == split.provider:
                details = (row.get("model_details") or {}).get(split.model)
                return model_object(split.provider, split.model, details, row.get("base_url"))
        return model_object(split.provider, split.model)


def cli_reference(
    provider: str | None, model: str | None, known: Sequence[str]
) -> tuple[str | None, str | None]:
    """Turn pi's ``--provider``/``--model`` into a Hermes reference and a thinking level.

    ``--model`` takes ``ID``, ``provider/ID`` or ``provider:ID`` (the prefix counts as a provider
    only when Hermes knows it), with an optional ``:LEVEL`` suffix.

    :param known: the provider names Hermes knows.
    :returns: the reference (None without ``--model``) and the level (None without a suffix).
    :raises ValueError: ``--provider`` without ``--model``.
    """
    if model is None:
        if provider is not None:
            raise ValueError(f"--provider requires --model (for example: --provider {provider} --model <id>)")
        return None, None
    level = None
    head, sep, tail = model.rpartition(":")
    if sep and tail in LEVEL_TO_EFFORT and head:
        model, level = head, tail
    if provider is None:
        prefix, slash, rest = model.partition("/")
        if slash and prefix in known:
            provider, model = prefix, rest
    if provider is not None:
        return f"{provider}:{model}", level
    return model, level
