"""Settings of the ``anthropic`` provider (``providers.anthropic`` in config.toml)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class ModelEntry(BaseModel):
    """A model advertised offline, given as a table instead of a bare id."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    context_window: int | None = Field(default=None, gt=0)
    vision: bool = True


class AnthropicSettings(BaseModel):
    """The Anthropic Messages API endpoint.

    :param api_key: sent as ``x-api-key``.
    :param base_url: the API root without ``/v1`` (default ``https://api.anthropic.com``).
    :param timeout_s: how long to wait for the TCP/TLS connection.
    :param stall_timeout_s: how long the upstream may stay silent (before the response
        headers or between stream bytes) before the call fails with ``network``.
    :param models: model ids (or tables) advertised offline in addition to the built-in list.
    :param extra_headers: headers added to every request (e.g. ``anthropic-beta``).
    :param proxy: an HTTP proxy URL for every request.
    :param max_tokens: the output limit sent when the request does not set one.
    :param anthropic_version: the ``anthropic-version`` header.
    """

    model_config = ConfigDict(extra="forbid")

    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout_s: float = Field(default=10.0, gt=0)
    stall_timeout_s: float = Field(default=60.0, gt=0)
    models: list[str | ModelEntry] = Field(default_factory=list)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    proxy: str | None = None
    max_tokens: int = Field(default=8192, ge=1)
    anthropic_version: str = "2023-06-01"

    @field_validator("api_key", "base_url", "proxy", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        # An empty environment variable means "not configured", not "an empty key".
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value
