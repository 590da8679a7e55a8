"""Typed records that plugins return from hooks (docs/plugin-hooks.md).

Everything here is a frozen dataclass and imports nothing heavy: a plugin's ``plugin.py`` can
build these without importing pydantic, aiohttp or its own implementation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo
    from hermes_core.kernel import Kernel
    from hermes_core.providers import Provider, ProviderPreset
    from hermes_core.run_bus import RunBusFactory
    from hermes_core.session.live import Session
    from hermes_core.settings_store import SettingsStore
    from hermes_core.storage import Storage

OptionType = Literal["str", "int", "float", "bool", "path"] | tuple[str, ...]
SettingsT = TypeVar("SettingsT")


class ProviderFactory(Protocol):
    """Builds a provider: ``factory(settings, name=..., preset=...)``.

    ``settings`` is the validated ``settings_model`` instance (or a plain dict without one),
    ``name`` the provider name asked for and ``preset`` the preset that name stands for, if any.
    """

    def __call__(self, settings: Any, /, *, name: str, preset: ProviderPreset | None) -> Provider: ...


class StorageFactory(Protocol):
    """Builds an unopened storage backend: ``factory(path=..., read_only=...)``.

    The kernel passes ``read_only=True`` only when ``storage.read_only`` is set.
    """

    def __call__(self, *, path: Path, read_only: bool = ...) -> Storage: ...


class ServerStorageFactory(Protocol):
    """Builds an unopened backend that lives on a database server (``StorageSpec.kind = "server"``).

    The kernel passes the ``[storage]`` settings: ``dsn`` (None when neither the settings nor the
    backend's environment variable name one), the pool bounds, and ``read_only`` when set.
    """

    def __call__(
        self, *, dsn: str | None, pool_size: int, pool_timeout_s: float, read_only: bool = ...
    ) -> Storage: ...


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """A command-line option of a transport, free of click.

    :param name: the flag without dashes (``ws`` → ``--ws``).
    :param type: ``str``, ``int``, ``float``, ``bool``, ``path`` or a tuple of choices.
    :param field: the settings field the flag fills (flag > env > config > default); flags
        without a field arrive in ``TransportContext.options``.
    :param group: options sharing a group are mutually exclusive.
    :param core: core settings the flag overrides when it is given and true (dotted name →
        value), e.g. ``{"storage.read_only": True}`` for a self-check that must write nothing.
    """

    name: str
    type: OptionType
    help: str
    multiple: bool = False
    default: Any = None
    field: str | None = None
    group: str | None = None
    core: Mapping[str, Any] | None = None


@dataclass(slots=True)
class TransportContext(Generic[SettingsT]):
    """What a transport factory gets (docs/plugin-hooks.md#hermes_transports).

    Generic over the transport's settings type: a factory taking ``TransportContext[MySettings]``
    reads ``ctx.settings`` as ``MySettings``.
    """

    kernel: Kernel
    options: Mapping[str, Any]
    ready: Awaitable[None]
    #: The validated transport settings (an instance of ``settings_model``); read after ``ready``.
    settings: SettingsT = None  # type: ignore[assignment]
    store: SettingsStore | None = None
    reload_settings: Callable[[], Awaitable[Any]] | None = None


@dataclass(frozen=True, slots=True)
class TransportSpec:
    """A protocol front-end; the CLI builds ``hermes <name>`` from it."""

    name: str
    summary: str
    factory: Callable[[TransportContext[Any]], Awaitable[int]]
    options: tuple[OptionSpec, ...] = ()
    settings_model: Any = None  # pydantic model class or "module:Class"
    config_section: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    long_running: bool = True
    # Core settings this transport always runs with (dotted name -> value), e.g.
    # ``{"model_fallback": False}``; flags, the environment and config.toml cannot undo them.
    core: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A model provider.

    ``factory(settings, name=..., preset=...)`` returns a :class:`~hermes_core.providers.Provider`.
    ``settings`` is an instance of ``settings_model`` (validated from ``providers.<name>`` plus
    the credential variables in ``env_vars``) or a plain dict when there is no model.
    ``presets`` are further provider names served by the same factory.
    """

    name: str
    summary: str
    factory: ProviderFactory
    settings_model: Any = None
    config_section: str | None = None
    env_vars: Mapping[str, str] = field(default_factory=dict)
    presets: tuple[ProviderPreset, ...] = ()
    requires_key: bool = True
    serves_custom: bool = False  # this factory also serves the [[providers.custom]] entries
    open_model_list: bool = True  # offline lists are advisory: ``name:any-id`` is accepted
    # Model ids starting with one of these are accepted even from a closed list (``mock:scenario:PATH``).
    model_prefixes: tuple[str, ...] = ()
    # The API root used when the settings name none. A configured ``base_url`` that differs makes
    # the provider a user-defined endpoint, whose model list the catalog probes like a custom one.
    base_url: str | None = None


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What one model costs, in US dollars per million tokens (None: the table does not say)."""

    input: float | None
    output: float | None
    cache_read: float | None = None


PriceLookup = Callable[[str, "str | None", "tuple[str, ...]"], Mapping[str, ModelPrice]]
"""``lookup(provider, base_url, model_ids)``: the prices of the ids the table knows."""


@dataclass(frozen=True, slots=True)
class PriceSource:
    """A table of per-model prices the model catalog shows (``hermes_price_sources``).

    ``lookup`` may be slow (it may load its table on first use): the catalog calls it on the
    kernel's executor, and only for the picker surfaces that show prices. It must not raise for
    an unknown provider or model; it leaves them out.
    """

    name: str
    summary: str
    lookup: PriceLookup


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a slash command handler returns (docs/slash-commands.md#where-commands-are-recognised)."""

    kind: Literal["exec", "send", "prefill", "alias"] = "exec"
    output: str | None = None
    message: str | None = None
    display: Mapping[str, Any] | None = None
    target: str | None = None
    data: Mapping[str, Any] | None = None


#: Which of some stored session ids a caller may see (:attr:`CommandContext.sees`).
SessionFilter = Callable[[list[str]], Awaitable[set[str]]]


@dataclass(frozen=True, slots=True)
class CommandContext:
    """What a slash command handler receives."""

    kernel: Kernel
    session: Session | None
    args: str
    surface: str
    name: str
    #: Which of some stored session ids the caller may see (a tenant's connection sees its own
    #: tenant's only); None: every session. Commands that list or find stored sessions ask it.
    sees: SessionFilter | None = None
    #: Who a model call the command makes charges (docs/reference/budgets.md#outside-a-turn);
    #: None: who the session's turns charge.
    charge: ChargeTo | None = None


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A slash command, the same on every surface."""

    name: str
    summary: str
    handler: Callable[[CommandContext], Awaitable[CommandResult]]
    usage: str = ""
    aliases: tuple[str, ...] = ()
    category: str = "general"
    subcommands: tuple[str, ...] = ()
    needs_terminal_ui: bool = False
    needs_session: bool = True
    busy_blocked: bool = False  # raise SessionBusy while the session is busy
    unavailable_on: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class StorageSpec:
    """A storage backend; ``factory(path=Path)`` returns a :class:`~hermes_core.storage.Storage`.

    With ``storage.read_only`` set the kernel calls ``factory(path=Path, read_only=True)``: the
    backend then creates and changes nothing, reads a missing database as empty and fails writes.
    """

    name: str
    factory: StorageFactory | ServerStorageFactory
    #: ``file``: ``factory(path=...)`` (SQLite); ``server``: ``factory(dsn=..., pool_size=...,
    #: pool_timeout_s=...)`` (PostgreSQL), see :class:`ServerStorageFactory`.
    kind: Literal["file", "server"] = "file"
    #: ``[storage]`` field → environment variable the CLI layers over ``config.toml`` when this
    #: backend is the chosen one (e.g. ``{"dsn": "HERMES_POSTGRES_DSN"}``).
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunBusSpec:
    """A run bus: where ``hermes api`` run events and run control travel between instances.

    ``bus.backend`` picks one by name (``memory``, in-process, is built in). The API server calls
    ``factory(url=..., instance_id=..., heartbeat_s=..., owner_grace_s=..., journal_events=...,
    retention_s=...)`` and drives the returned ``hermes_core.RunBus`` (docs/plugin-hooks.md
    lists its methods under ``hermes_run_buses``).
    """

    name: str
    #: Builds the (unstarted) bus.
    factory: RunBusFactory
    #: ``[bus]`` field → environment variable the CLI layers over ``config.toml`` when this bus
    #: is the chosen one (e.g. ``{"url": "HERMES_REDIS_URL"}``).
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LedgerSpec:
    """A budget ledger plugin (``hermes_budget_ledgers``): ``factory(kernel)`` returns a
    :class:`~hermes_core.budget_ledger.BudgetLedger`, or None when it does not apply (the
    kernel's records are used then). Here with the other specs, so declaring one does not
    import the ledger's vocabulary (``hermes_core.budget_ledger``) at start-up."""

    name: str
    factory: Any  # Callable[[Kernel], BudgetLedger | None]


@dataclass(frozen=True, slots=True)
class ConfigSection:
    """A top-level table of ``config.toml`` that a plugin reads (docs/plugin-hooks.md#hermes_config_sections).

    Declaring it makes the table's keys known to ``hermes config get/set`` and to the unknown-key
    warning, checked against ``settings_model``.

    :param name: the table's name (``mcp_servers``, ``delegation``).
    :param summary: one line on what the table configures.
    :param settings_model: a pydantic model class (or ``"module:Class"``, imported only when a key
        is checked) the table is validated with; None accepts any keys.
    :param entries: the table holds named entries (``[mcp_servers.NAME]``), each validated with
        ``settings_model``; False: the table itself is.
    """

    name: str
    summary: str
    settings_model: Any = None
    entries: bool = False


@dataclass(frozen=True, slots=True)
class SchemaSpec:
    """A machine-readable description of one wire protocol, for ``hermes schema export``.

    :param name: the protocol's name (``tui``, ``api``, ``acp``); also the file name
        ``<name>.json`` of the export.
    :param summary: one line on what the document describes.
    :param kind: the document's format: ``openrpc`` (methods and events), ``openapi`` (routes)
        or ``jsonschema`` (a plain JSON Schema with ``$defs``); ``hermes schema diff`` compares
        documents of the same kind.
    :param build: returns the document (JSON-ready, deterministic: two calls give equal
        results). Called only by the schema command, so it may import pydantic and the plugin's
        wire models.
    """

    name: str
    summary: str
    kind: Literal["openrpc", "openapi", "jsonschema"]
    build: Callable[[], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """A policy plugin's verdict on one tool call (docs/reference/core.md#combining-decisions)."""

    decision: Literal["allow", "ask", "deny"]
    reason: str = ""
    key: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """A tool call as policy plugins see it."""

    session_id: str
    call_id: str
    name: str
    kind: str
    args: Mapping[str, Any]
    paths: tuple[Path, ...]
    command: str | None
    cwd: Path
