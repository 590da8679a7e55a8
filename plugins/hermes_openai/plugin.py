"""Declare the ``openai`` provider, its presets and the custom-provider factory.

Importing this module is cheap: it builds records only. pydantic, aiohttp and the HTTP code are
imported when the kernel validates settings or calls the factory.
"""

from __future__ import annotations

from typing import Any

from hermes_core import ModelInfo, Provider, ProviderPreset, ProviderSpec, hookimpl

OPENAI_BASE_URL = "https://api.openai.com/v1"

PRESETS: tuple[ProviderPreset, ...] = (
    ProviderPreset(
        name="openrouter",
        summary="OpenRouter: many vendors' models behind one OpenAI-compatible API",
        base_url="https://openrouter.ai/api/v1",
        env_vars={"api_key": "OPENROUTER_API_KEY"},
        models=(
            ModelInfo("anthropic/claude-sonnet-4.6", 200_000, True),
            ModelInfo("anthropic/claude-opus-4.1", 200_000, True),
            ModelInfo("openai/gpt-4.1", 1_047_576, True),
            ModelInfo("openai/gpt-4.1-mini", 1_047_576, True),
            ModelInfo("google/gemini-2.5-pro", 1_048_576, True),
            ModelInfo("deepseek/deepseek-chat", 163_840, False),
        ),
    ),
    ProviderPreset(
        name="ollama",
        summary="Ollama on this machine (OpenAI-compatible endpoint)",
        base_url="http://127.0.0.1:11434/v1",
        requires_key=False,
    ),
    ProviderPreset(
        name="vllm",
        summary="a vLLM server on this machine",
        base_url="http://127.0.0.1:8000/v1",
        requires_key=False,
    ),
    ProviderPreset(
        name="llamacpp",
        summary="a llama.cpp server on this machine",
        base_url="http://127.0.0.1:8080/v1",
        requires_key=False,
    ),
    ProviderPreset(
        name="lmstudio",
        summary="LM Studio's local server",
        base_url="http://127.0.0.1:1234/v1",
        requires_key=False,
    ),
)


def make_provider(settings: Any, *, name: str = "openai", preset: ProviderPreset | None = None) -> Provider:
    """Build a provider for OpenAI itself, one of its presets or a custom endpoint.

    :param settings: an ``OpenAISettings`` (or a mapping validated into one, or ``None``).
    :param name: the provider name requests and errors are labelled with.
    :param preset: the preset or custom entry whose ``base_url`` applies when the settings
        give none; ``None`` means OpenAI itself.
    :returns: a live :class:`~hermes_core.Provider`; no connection is opened yet.
    """
    from hermes_openai.provider import OpenAIProvider

    return OpenAIProvider(settings, name=name, preset=preset)


@hookimpl
def hermes_model_providers() -> ProviderSpec:
    """Declare the ``openai`` provider with its local and hosted presets."""
    return ProviderSpec(
        name="openai",
        summary="OpenAI and OpenAI-compatible chat completions endpoints",
        factory=make_provider,
        settings_model="hermes_openai.settings:OpenAISettings",
        env_vars={"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"},
        presets=PRESETS,
        requires_key=True,
        serves_custom=True,
        base_url=OPENAI_BASE_URL,
    )
