"""Settings of the ``anthropic`` provider (``providers.anthropic`` in config.toml)."""

from __future__ import annotations

from pydantic import Field

from hermes_core import provider_kit


class ModelEntry(provider_kit.ModelEntry):
    """A model advertised offline, given as a table; Claude models take images unless told."""

    vision: bool = True


class AnthropicSettings(provider_kit.HttpSettings):
    """The Anthropic Messages API endpoint: the fields of ``provider_kit.HttpSettings``, and more.

    ``api_key`` is sent as ``x-api-key``; ``base_url`` is the API root without ``/v1`` (default
    ``https://api.anthropic.com``); ``extra_headers`` suit e.g. ``anthropic-beta``.

    :param max_tokens: the output limit sent when the request does not set one.
    :param anthropic_version: the ``anthropic-version`` header.
    """

    # The same field with this plugin's entry type (pydantic keeps its place among the fields).
    models: list[str | ModelEntry] = Field(default_factory=list)  # type: ignore[assignment]
    max_tokens: int = Field(default=8192, ge=1)
    anthropic_version: str = "2023-06-01"
