"""``hermes_price_sources``: price tables the catalog consults for the picker surfaces
(docs/plugin-hooks.md#hermes_price_sources)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from typing import Any

from hermes_core import ModelPrice, PriceSource, hookimpl
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel

ORDER = itertools.count()


class Table:
    """A throwaway plugin declaring one price table that records how (and when) it is called."""

    def __init__(self, name: str, prices: Mapping[str, ModelPrice], fail: bool = False) -> None:
        self.hermes_plugin_name = name
        self.name, self.prices, self.fail = name, prices, fail
        self.calls: list[tuple[str, str | None, tuple[str, ...], bool]] = []
        self.asked_at: int | None = None

    def lookup(self, provider: str, base_url: str | None, ids: tuple[str, ...]) -> Mapping[str, ModelPrice]:
        on_loop_thread = threading.current_thread() is threading.main_thread()
        if self.asked_at is None:
            self.asked_at = next(ORDER)
        self.calls.append((provider, base_url, ids, on_loop_thread))
        if self.fail:
            raise RuntimeError("the table is broken")
        return {m: self.prices[m] for m in ids if m in self.prices}

    @hookimpl
    def hermes_price_sources(self) -> PriceSource:
        return PriceSource(name=self.name, summary="test prices", lookup=self.lookup)


def _row(catalog: dict[str, Any], slug: str) -> dict[str, Any]:
    return next(p for p in catalog["providers"] if p["slug"] == slug)


async def test_prices_reach_the_catalog_from_the_first_table_that_knows_them() -> None:
    broken = Table("broken", {}, fail=True)
    first = Table("first", {"m-1": ModelPrice(3.0, 15.0, 0.3), "m-free": ModelPrice(0, 0)})
    other = Table("other", {"m-1": ModelPrice(99.0, 99.0), "m-2": ModelPrice(0.5, None)})
    kernel = make_kernel(
        FakeProviderPlugin(FakeProvider(models=("m-1", "m-2", "m-free", "m-3")), name="lab"),
        broken,
        first,
        other,
        settings={"model": "lab:m-1"},
    )
    async with kernel.running():
        plain = await kernel.model_catalog(network=False)
        assert "pricing_sources" not in plain and "pricing" not in _row(plain, "lab")
        assert first.calls == []  # only the picker surfaces ask

        catalog = await kernel.model_catalog(network=False, prices=True)
        lab = _row(catalog, "lab")
        # Tables are asked in the registry's order; the one asked first prices m-1.
        assert first.asked_at is not None and other.asked_at is not None
        winner, later = (first, other) if first.asked_at < other.asked_at else (other, first)
        m1 = winner.prices["m-1"]
        assert lab["model_details"]["m-1"]["pricing"] == {
            "input": m1.input,
            "output": m1.output,
            "cache_read": m1.cache_read,
        }
        assert lab["pricing"]["m-free"] == {"input": "free", "output": "free", "cache": None, "free": True}
        assert lab["pricing"]["m-2"] == {"input": "$0.50", "output": "", "cache": None, "free": False}
        assert first.prices["m-1"] == ModelPrice(3.0, 15.0, 0.3)
        if winner is first:
            assert lab["pricing"]["m-1"] == {
                "input": "$3.00",
                "output": "$15.00",
                "cache": "$0.30",
                "free": False,
            }
        assert "pricing" not in lab["model_details"]["m-3"]
        assert sorted(catalog["pricing_sources"]) == ["first", "other"]
        provider, _url, ids, on_loop = winner.calls[0]
        assert provider == "lab" and ids == ("m-1", "m-2", "m-free", "m-3") and on_loop is False
        assert "m-1" not in later.calls[0][2]  # what a table priced is not asked again
        assert broken.calls  # it was asked, failed, and changed nothing
