"""Declare the ``genai-prices`` price table (docs/plugin-hooks.md#hermes_price_sources).

Cheap to import: the table (a large data module and its HTTP client dependency) is imported by
:mod:`hermes_prices.table` the first time a picker asks for prices, on the kernel's executor.
Without the ``prices`` extra installed the catalog simply shows no prices.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from hermes_core import ModelPrice, PriceSource, hookimpl


def lookup(provider: str, base_url: str | None, model_ids: tuple[str, ...]) -> Mapping[str, ModelPrice]:
    """Return the prices ``genai-prices`` knows for these models of one provider.

    :param provider: the provider name (``openai``, ``openrouter``, a custom name, …).
    :param base_url: the endpoint the provider calls; it picks the table's provider.
    :param model_ids: the provider's model ids.
    :returns: ``{model id: ModelPrice}`` for the ids the table knows.
    """
    table = importlib.import_module("hermes_prices.table")
    found: Mapping[str, ModelPrice] = table.lookup(provider, base_url, model_ids)
    return found


@hookimpl
def hermes_price_sources() -> PriceSource:
    """Declare the table.

    :returns: its record.
    """
    return PriceSource(
        name="genai-prices",
        summary="per-model prices from the genai-prices package (US dollars per million tokens)",
        lookup=lookup,
    )
