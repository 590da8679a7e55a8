"""Core settings (docs/reference/core.md#settings), validated with pydantic.

Importing this module imports pydantic; ``import hermes_core`` does not, so the kernel imports it
on first use. ``hermes_cli`` builds the raw mapping (flags, environment, ``.env``,
``config.toml``) and the kernel validates it here. Transport sections (``acp``, ``tui``,
``api_server``, ``display``) are kept as raw tables for the transports to validate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StorageSettings(_Section):
    backend: str = "sqlite"
    path: Path | None = None  # default: <data dir>/hermes.sqlite3
    # Open without write access: nothing is created or changed, a missing database reads as
    # empty and every write fails (self-checks, inspection).
    read_only: bool = False
    # Backends on a database server (storage.backend = "postgres"): where, and how many
    # connections this process may hold; a request that finds none free within pool_timeout_s
    # fails as "storage unavailable" instead of waiting.
    dsn: str | None = None
    pool_size: int = Field(10, ge=1)
    pool_timeout_s: float = Field(5.0, gt=0)


class BusSettings(_Section):
    """Where ``hermes api`` run events and run control travel (``memory``: this process only)."""

    backend: str = "memory"
    # A bus on a server (bus.backend = "redis"): where it is.
    url: str | None = None
    # How often an instance says it is alive.
    heartbeat_s: float = Field(1.0, gt=0)
    # How long an instance may go without a heartbeat (a GC pause, a frozen VM, a stalled host)
    # before other instances end its runs (owner_lost); like a session's 30 s writer lease.
    owner_grace_s: float = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _grace_spans_heartbeats(self) -> BusSettings:
        if self.owner_grace_s < 3 * self.heartbeat_s:
            if "owner_grace_s" in self.model_fields_set:
                raise ValueError("bus.owner_grace_s must be at least three times bus.heartbeat_s")
            self.owner_grace_s = 3 * self.heartbeat_s  # a slow heartbeat stretches the default
        return self


class EventLogSettings(_Section):
    """Every session's durable event log (docs/reference/core.md#the-event-log)."""

    enabled: bool = True
    # Per session: past either limit the oldest chunks are dropped (docs/reference/core.md#retention).
    max_events: int = Field(20_000, ge=100)
    max_bytes: int = Field(16 * 1024 * 1024, ge=64 * 1024)


class AgentSettings(_Section):
    max_tool_rounds: int = Field(60, ge=1)
    provider_retries: int = Field(2, ge=0)
    provider_retry_max_wait_s: float = Field(20.0, ge=0)


class ApprovalSettings(_Section):
    timeout_s: float = Field(300.0, gt=0)


class QuestionSettings(_Section):
    clarify_timeout_s: float = Field(300.0, gt=0)
    sudo_timeout_s: float = Field(120.0, gt=0)
    secret_timeout_s: float = Field(300.0, gt=0)


class CompressionSettings(_Section):
    auto_threshold: float = Field(0.85, ge=0, le=1)


class TitleSettings(_Section):
    refine: bool = True


class ToolSettings(_Section):
    terminal_timeout_s: float = Field(120.0, gt=0)
    output_cap_chars: int = Field(50000, ge=100)


class CatalogSettings(_Section):
    probe_timeout_s: float = Field(5.0, gt=0)
    cache_ttl_s: float = Field(3600.0, ge=0)


class BudgetLimits(_Section):
    """The limits of one budget bucket (docs/reference/budgets.md); None: no limit."""

    spend_usd: float | None = Field(None, ge=0)
    tokens_per_minute: int | None = Field(None, ge=1)
    requests_per_minute: int | None = Field(None, ge=1)
    concurrent_runs: int | None = Field(None, ge=1)

    def any(self) -> bool:
        """Tell whether any limit is set."""
        # Read the fields, not model_dump(): this runs before every turn (Budgets.enabled).
        return any(getattr(self, name) is not None for name in type(self).model_fields)


class ModelPriceSetting(_Section):
    """A configured price, in US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class BudgetSettings(_Section):
    """Spend and rate limits per key, tenant and session (docs/reference/budgets.md)."""

    #: Limits every key / tenant / session gets unless ``keys`` / ``tenants`` name it.
    key: BudgetLimits = Field(default_factory=BudgetLimits)
    tenant: BudgetLimits = Field(default_factory=BudgetLimits)
    session: BudgetLimits = Field(default_factory=BudgetLimits)
    keys: dict[str, BudgetLimits] = Field(default_factory=dict)
    tenants: dict[str, BudgetLimits] = Field(default_factory=dict)
    #: ``"provider/model"``, ``"provider"`` or ``"*"`` → price; before the price tables.
    prices: dict[str, ModelPriceSetting] = Field(default_factory=dict)
    #: The output limit a turn's model call gets (and reserves) when the request sets none.
    max_output_tokens: int = Field(4096, ge=1)
    #: How long a reservation or a run's slot outlives a silent instance.
    reservation_ttl_s: float = Field(300.0, gt=0)
    #: Who the TUI and ACP transports (and the kernel used directly) charge.
    default_key: str = Field("local", min_length=1)
    default_tenant: str = Field("default", min_length=1)

    def enabled(self) -> bool:
        """Tell whether any bucket has a limit."""
        tables = [self.key, self.tenant, self.session, *self.keys.values(), *self.tenants.values()]
        return any(t.any() for t in tables)


class CustomProvider(_Section):
    name: str = Field(min_length=1)
    base_url: str = Field(min_length=1)
    api_key_env: str | None = None
    api_key: str | None = None  # filled by hermes_cli from api_key_env; never in config.toml


class ProvidersSettings(BaseModel):
    """``providers.<name>`` tables (validated by each provider) plus ``[[providers.custom]]``."""

    model_config = ConfigDict(extra="allow")
    custom: list[CustomProvider] = Field(default_factory=list)

    def section(self, name: str) -> dict[str, Any]:
        """Return the raw table for provider ``name`` (empty when absent)."""
        extra = self.model_extra or {}
        value = extra.get(name)
        return dict(value) if isinstance(value, dict) else {}


class CoreSettings(BaseModel):
    """Everything the kernel reads; built by ``hermes_cli`` or an embedder."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    model_aliases: dict[str, str] = Field(default_factory=dict)
    reasoning_effort: ReasoningEffort | None = None
    data_dir: Path | None = None  # None: nothing persistent outside storage.path
    storage: StorageSettings = Field(default_factory=StorageSettings)
    bus: BusSettings = Field(default_factory=BusSettings)
    event_log: EventLogSettings = Field(default_factory=EventLogSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    questions: QuestionSettings = Field(default_factory=QuestionSettings)
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    titles: TitleSettings = Field(default_factory=TitleSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    catalog: CatalogSettings = Field(default_factory=CatalogSettings)
    providers: ProvidersSettings = Field(default_factory=ProvidersSettings)
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)
    model_source: str = "default"  # where `model` came from: flag, env, config, default
    # With no model configured: answer with the offline mock:echo (True), or with nothing until one
    # is configured (False; ACP sets this, since an editor user would take echo replies for a bug).
    model_fallback: bool = True
    # Write every call of a real provider, chunk by chunk, to this directory
    # (docs/reference/scenarios.md#record-and-replay); set by `hermes --record DIR` or HERMES_RECORD_DIR.
    record_dir: Path | None = None

    def section(self, name: str) -> dict[str, Any]:
        """Return a transport's raw table (``acp``, ``tui``, ``api_server``, ``display``)."""
        extra = self.model_extra or {}
        value = extra.get(name)
        return dict(value) if isinstance(value, dict) else {}


def validate_settings(raw: Any) -> CoreSettings:
    """Return ``raw`` (a mapping or ``CoreSettings``) validated; ``ConfigError`` names each problem."""
    from pydantic import ValidationError

    from hermes_core.errors import ConfigError

    if isinstance(raw, CoreSettings):
        return raw
    try:
        return CoreSettings.model_validate(dict(raw or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise ConfigError(f"invalid settings: {problems}") from exc
