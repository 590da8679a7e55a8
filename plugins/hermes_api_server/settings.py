"""The ``[api_server]`` settings model of ``hermes api`` (docs/reference/api-server.md#settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PLACEHOLDER_KEYS = frozenset({"changeme", "your-api-key", "your_api_key", "secret", "password"})


class BrowserControlSettings(BaseModel):
    """Opt-in browser-extension control (docs/reference/api-server.md#browser-control)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    developer_mode: bool = False


def check_key(value: str, field: str) -> str:
    """Refuse a configured key that is too short or a known placeholder.

    :param value: the key as configured.
    :param field: the field name, for the message.
    :returns: the key, stripped.
    :raises ValueError: the key is weak.
    """
    key = value.strip()
    hint = "generate one with: python -c 'import secrets; print(\"hk_\" + secrets.token_urlsafe(32))'"
    if len(key) < 16:
        raise ValueError(f"{field} is shorter than 16 characters; {hint}")
    if key.lower() in PLACEHOLDER_KEYS or len(set(key)) == 1:
        raise ValueError(f"{field} is a placeholder value; {hint}")
    return key


class ApiSettings(BaseModel):
    """Validated ``[api_server]`` table (flags > environment > config.toml > defaults)."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8642, ge=0, le=65535)
    key: str | None = None
    keys: list[str] = Field(default_factory=list)
    cors_origins: list[str] = Field(default_factory=list)
    model_name: str = Field(default="hermes-agent", min_length=1)
    model_aliases: dict[str, str] = Field(default_factory=dict)
    direct_model_requests: bool = False
    tool_progress_events: bool = True
    show_reasoning: bool = False
    max_concurrent_runs: int = Field(default=10, ge=0)
    max_body_bytes: int = Field(default=10_000_000, ge=1)
    run_journal_events: int = Field(default=1000, ge=1)
    run_journal_retention_s: float = Field(default=3600, ge=0)
    run_status_retention_s: float = Field(default=86400, ge=0)
    responses_max_stored: int = Field(default=10000, ge=1)
    meta_requests: Literal["detect", "off"] = "detect"
    # A frontend's own conversation and user ids (docs/reference/api-server.md#chat-sessions):
    # the first header present seeds the chat's session id / is mixed into every derived id.
    chat_id_headers: list[str] = Field(default_factory=lambda: ["X-OpenWebUI-Chat-Id"])
    user_id_headers: list[str] = Field(default_factory=lambda: ["X-OpenWebUI-User-Id"])
    # Without those, a chat's history finds its session: how long and how many keys are kept.
    chat_index_ttl_s: float = Field(default=30 * 86400, gt=0)
    chat_index_max_entries: int = Field(default=100_000, ge=1)
    shutdown_grace_s: float = Field(default=10, ge=0)
    header_timeout_s: float = Field(default=20, gt=0)
    body_timeout_s: float = Field(default=60, gt=0)
    browser_control: BrowserControlSettings = Field(default_factory=BrowserControlSettings)
    # The web console at /console (docs/console.md): off unless turned on.
    console: bool = False
    console_session_ttl_s: float = Field(default=3600, gt=0, le=86400)
    console_signin_max_failures: int = Field(default=5, ge=1)
    console_signin_window_s: float = Field(default=60, gt=0, le=3600)
    approval_profile: Literal["ask_everything", "default", "accept_edits", "off"] = "accept_edits"
    workspace_roots: list[str] = Field(default_factory=list)
    # Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or CIDR).
    trusted_proxies: list[str] = Field(default_factory=list)
    # Where new sessions' tools work; None gives each new session a folder of its own.
    workspace: Path | None = None

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: list[str]) -> list[str]:
        from hermes_api_server.proxies import parse_networks

        parse_networks(value)  # raises ValueError naming the bad entry
        return [v.strip() for v in value]

    @field_validator("chat_id_headers", "user_id_headers")
    @classmethod
    def _header_names(cls, value: list[str]) -> list[str]:
        names = [v.strip() for v in value]
        for name in names:
            if not name or not all(c.isalnum() or c in "-_" for c in name):
                raise ValueError(f"{name!r} is not an HTTP header name")
        return names

    @field_validator("cors_origins", "trusted_proxies", "chat_id_headers", "user_id_headers", mode="before")
    @classmethod
    def _split_origins(cls, value: Any) -> Any:
        # The environment variable is a comma list.
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("workspace", mode="before")
    @classmethod
    def _blank_workspace(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("key", mode="before")
    @classmethod
    def _blank_key(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("key")
    @classmethod
    def _strong_key(cls, value: str | None) -> str | None:
        return None if value is None else check_key(value, "key")

    @field_validator("keys")
    @classmethod
    def _strong_keys(cls, value: list[str]) -> list[str]:
        return [check_key(k, f"keys[{i}]") for i, k in enumerate(value)]

    @model_validator(mode="after")
    def _consistent(self) -> ApiSettings:
        configured = ([self.key] if self.key else []) + list(self.keys)
        if len(set(configured)) != len(configured):
            raise ValueError("keys: the same key is listed twice across key and keys")
        for alias, target in self.model_aliases.items():
            if not alias or alias == self.model_name:
                raise ValueError(f"model_aliases: alias {alias!r} equals model_name")
            if not isinstance(target, str) or ":" not in target:
                raise ValueError(
                    f"model_aliases.{alias}: target {target!r} is not a provider:model reference"
                )
        return self

    @property
    def configured_keys(self) -> list[str]:
        """Return the explicitly configured keys, ``key`` first."""
        return ([self.key] if self.key else []) + list(self.keys)


ApiServerSettings = ApiSettings
