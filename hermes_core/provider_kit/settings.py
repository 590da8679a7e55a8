"""The settings every HTTP provider shares, as pydantic bases a plugin subclasses.

Importing this module imports pydantic; ``hermes_core.provider_kit`` loads it only when one of
its names is first used (in practice, by a plugin's own settings module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

M = TypeVar("M", bound=BaseModel)


class ModelEntry(BaseModel):
    """A model advertised offline, given as a table instead of a bare id."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    context_window: int | None = Field(default=None, gt=0)
    vision: bool = False


class HttpSettings(BaseModel):
    """What every HTTP provider is configured with (``providers.<name>`` in config.toml).

    :param api_key: the credential; unset when blank.
    :param base_url: the API root; unset when blank, kept without a trailing ``/``.
    :param timeout_s: how long to wait for the TCP/TLS connection.
    :param stall_timeout_s: how long the upstream may stay silent (before the response
        headers or between stream bytes) before the call fails with ``network``.
    :param models: model ids (or tables) advertised offline in addition to the built-in list.
    :param extra_headers: headers added to every request.
    :param proxy: an HTTP proxy URL for every request.
    """

    model_config = ConfigDict(extra="forbid")

    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout_s: float = Field(default=10.0, gt=0)
    stall_timeout_s: float = Field(default=60.0, gt=0)
    models: list[str | ModelEntry] = Field(default_factory=list)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    proxy: str | None = None

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


def coerce_settings(model: type[M], settings: Any) -> M:
    """Return ``settings`` as an instance of ``model``.

    :param model: the provider's settings class.
    :param settings: an instance already, ``None`` (all defaults), a mapping, or another model
        whose ``model_dump()`` fits.
    """
    if isinstance(settings, model):
        return settings
    if settings is None:
        return model()
    if isinstance(settings, Mapping):
        return model.model_validate(dict(settings))
    return model.model_validate(settings.model_dump())
