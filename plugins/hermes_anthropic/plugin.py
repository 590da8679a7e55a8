"""Declare the ``anthropic`` provider.

Importing this module is cheap: it builds a record only. pydantic, aiohttp and the HTTP code are
imported when the kernel validates settings or calls the factory.
"""

from __future__ import annotations

from typing import Any

from hermes_core import Provider, ProviderPreset, ProviderSpec, hookimpl

ANTHROPIC_BASE_URL = "https://api.anthropic.com"


def make_provider(
    settings: Any, *, name: str = "anthropic", preset: ProviderPreset | None = None
) -> Provider:
    """Build the Anthropic provider.

    :param settings: an ``AnthropicSettings`` (or a mapping validated into one, or ``None``).
    :param name: the provider name requests and errors are labelled with.
    :param preset: unused today (no presets); its ``base_url`` applies when given.
    :returns: a live :class:`~hermes_core.Provider`; no connection is opened yet.
    """
    from hermes_anthropic.provider import AnthropicProvider

    return AnthropicProvider(settings, name=name, preset=preset)


@hookimpl
def hermes_model_providers() -> ProviderSpec:
    """Declare the ``anthropic`` provider (Claude over the Messages API)."""
    return ProviderSpec(
        name="anthropic",
        summary="Anthropic Claude models over the Messages API",
        factory=make_provider,
        settings_model="hermes_anthropic.settings:AnthropicSettings",
        env_vars={"api_key": "ANTHROPIC_API_KEY", "base_url": "ANTHROPIC_BASE_URL"},
        requires_key=True,
        base_url=ANTHROPIC_BASE_URL,
    )
