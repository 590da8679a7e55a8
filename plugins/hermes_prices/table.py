"""Look models up in ``genai-prices`` (https://github.com/pydantic/genai-prices).

The package matches an endpoint's URL to its provider (api.openai.com, api.anthropic.com,
openrouter.ai, …) and a model id to that provider's price entry, so a self-hosted server's
models, which cost what the operator pays, get no price. Loading the bundled table takes a
noticeable fraction of a second; it happens once, on the first lookup.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from hermes_core import ModelPrice

log = logging.getLogger("hermes.prices")
_said_missing = False


def _usd(prices: Any, key: str) -> float | None:
    value = getattr(prices, key, None)
    value = getattr(value, "base", value)  # tiered prices: the price below the first tier
    return float(value) if isinstance(value, Decimal | int | float) else None


def lookup(provider: str, base_url: str | None, model_ids: tuple[str, ...]) -> dict[str, ModelPrice]:
    """Return ``{model id: ModelPrice}`` for the ids the table prices at this endpoint.

    :param provider: the provider name (only for the log).
    :param base_url: the endpoint; without one nothing is priced.
    :param model_ids: the ids to look up.
    """
    global _said_missing
    try:
        from genai_prices import data_snapshot
    except ImportError:
        if not _said_missing:
            _said_missing = True
            log.info("model prices are not shown: install the 'prices' extra (genai-prices)")
        return {}
    if not base_url:
        return {}
    snapshot = data_snapshot.get_snapshot()
    now = datetime.now(UTC)
    found: dict[str, ModelPrice] = {}
    for model_id in model_ids:
        try:
            _, model = snapshot.find_provider_model(model_id, None, None, base_url)
        except LookupError:
            continue
        prices = model.get_prices(now)
        price = ModelPrice(
            _usd(prices, "input_mtok"), _usd(prices, "output_mtok"), _usd(prices, "cache_read_mtok")
        )
        if price.input is not None or price.output is not None:
            found[model_id] = price
    log.debug("priced %d of %d models of %s", len(found), len(model_ids), provider)
    return found
