"""pi's ``Model`` objects and ``--model`` parsing over the kernel's catalog
(docs/reference/pi.md#models-and-thinking-levels)."""

from __future__ import annotations

import pytest

from hermes_core.testing import make_kernel
from hermes_pi.models import ModelCatalog, cli_reference, level_of, model_object


async def test_models_carry_the_catalog_prices_and_window() -> None:
    kernel = make_kernel(
        entry_points=["openai", "mock", "prices"],
        settings={"model": "openai:gpt-5", "providers": {"openai": {"api_key": "sk-test-0123456789abcdef"}}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="pi", owner="pi")
        catalog = ModelCatalog(kernel)
        current = await catalog.current(session)
        assert current is not None and (current["provider"], current["id"]) == ("openai", "gpt-5")
        assert current["api"] == "openai-completions" and current["contextWindow"] > 0
        assert 0 < current["cost"]["input"] < current["cost"]["output"]  # USD per million tokens
        available = await catalog.available(session)
        assert current in available
        mock = next(m for m in available if m["provider"] == "mock")
        assert mock["cost"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}


def test_a_model_object_without_details() -> None:
    model = model_object("custom", "m1")
    assert (model["contextWindow"], model["input"], model["api"]) == (0, ["text"], "hermes")


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        (None, None, (None, None)),
        (None, "gpt-5", ("gpt-5", None)),
        (None, "openai/gpt-5:high", ("openai:gpt-5", "high")),
        (None, "anthropic/x/y", ("anthropic:x/y", None)),
        (None, "nobody/gpt-5", ("nobody/gpt-5", None)),
        ("openai", "gpt-5:max", ("openai:gpt-5", "max")),
        (None, "ollama:qwen3:8b", ("ollama:qwen3:8b", None)),
    ],
)
def test_cli_reference(
    provider: str | None, model: str | None, expected: tuple[str | None, str | None]
) -> None:
    assert cli_reference(provider, model, ["openai", "anthropic", "mock"]) == expected


def test_provider_without_model_is_refused() -> None:
    with pytest.raises(ValueError, match="--provider requires --model"):
        cli_reference("openai", None, ["openai"])


def test_levels() -> None:
    assert [level_of(e) for e in (None, "none", "minimal", "xhigh")] == ["off", "off", "minimal", "xhigh"]
