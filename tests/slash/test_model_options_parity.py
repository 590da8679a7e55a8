"""The TUI's ``model.options`` and the API's ``GET /api/model/options`` are one payload: the core's
catalog, with probe states, user-defined endpoints, model details and per-model prices from the
``genai-prices`` table (docs/reference/core.md#providers-and-models)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from genai_prices import data_snapshot

from tests.api.api_helpers import call
from tests.providers.self_hosted import self_hosted_on_a_thread

from .transports import start_api, start_tui


def _expected(model: str, url: str) -> dict[str, Any]:
    """What the table itself says, per million tokens."""
    _, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, url)
    prices = info.get_prices(datetime.now(UTC))
    return {
        "input": float(prices.input_mtok),
        "output": float(prices.output_mtok),
        "cache_read": float(prices.cache_read_mtok),
    }


def _without_times(payload: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for row in payload["providers"]:
        probe = {k: v for k, v in row["probe"].items() if k != "fetched_at"}
        rows.append({**{k: v for k, v in row.items() if k != "warning"}, "probe": probe})
    return {**{k: v for k, v in payload.items() if k != "object"}, "providers": rows}


def test_tui_and_api_answer_the_same_catalog_with_prices(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with self_hosted_on_a_thread() as server:
        (home / "config.toml").write_text(
            'model = "openai:gpt-4.1-mini"\n[titles]\nrefine = false\n'
            '[providers.openai]\napi_key = "sk-openai"\n[providers.openrouter]\napi_key = "sk-or"\n'
            f'[[providers.custom]]\nname = "lab"\nbase_url = "{server.url}/v1"\napi_key = "sk-self-hosted"\n'
        )
        tui = start_tui(home)
        api = start_api(home)
        try:
            for refresh in (False, True):
                options = tui.call("model.options", refresh=refresh)
                reply = asyncio.run(
                    call(api, "GET", "/api/model/options" + ("?refresh=1" if refresh else ""))
                )
                assert reply.status == 200, reply.text
                assert reply.json["object"] == "hermes.model_options"
                assert _without_times(options) == _without_times(reply.json)
                assert options["refreshed"] is refresh and options["pricing_sources"] == ["genai-prices"]
                rows = {row["slug"]: row for row in options["providers"]}
                openai, openrouter, lab = rows["openai"], rows["openrouter"], rows["lab"]
                assert openai["is_current"] and not openai["is_user_defined"]
                assert openai["model_details"]["gpt-4.1-mini"]["pricing"] == _expected(
                    "gpt-4.1-mini", "https://api.openai.com/v1"
                )
                shown = openai["pricing"]["gpt-4.1-mini"]
                cost = _expected("gpt-4.1-mini", "https://api.openai.com/v1")
                assert shown == {
                    "input": f"${cost['input']:.2f}",
                    "output": f"${cost['output']:.2f}",
                    "cache": f"${cost['cache_read']:.2f}",
                    "free": False,
                }
                sonnet = "anthropic/claude-sonnet-4.6"
                assert openrouter["model_details"][sonnet]["pricing"] == _expected(
                    sonnet, "https://openrouter.ai/api/v1"
                )
                assert lab["is_user_defined"] and lab["base_url"] == f"{server.url}/v1"
                assert "pricing" not in lab  # a self-hosted server's cost is not in any table
                if refresh:
                    assert lab["probe"]["status"] == "live"
                    assert lab["models"] == ["gpt-4.1-mini", "qwen3-coder-30b"]
                    assert "pricing" not in lab and "fetched_at" in lab["probe"]
                else:
                    assert lab["probe"]["status"] == "skipped" and lab["models"] == []
        finally:
            tui.close()
            api.stop()
