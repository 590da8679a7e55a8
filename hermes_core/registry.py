"""The kernel's registry: every record plugins contributed, attributed to its plugin."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_core import __distribution__

if TYPE_CHECKING:
    from hermes_core.records import (
        CommandSpec,
        ConfigSection,
        LedgerSpec,
        PriceSource,
        ProviderSpec,
        RunBusSpec,
        SchemaSpec,
        StorageSpec,
        TransportSpec,
    )
    from hermes_core.tools import ToolSpec
    from hermes_core.tracing import TracerSpec

FIRST_PARTY_DISTRIBUTION = __distribution__
RESERVED_COMMANDS = frozenset({"run", "plugins", "models", "config", "sessions", "version", "help", "schema"})


@dataclass(slots=True)
class PluginRecord:
    """One plugin as ``hermes plugins`` shows it."""

    name: str
    version: str | None = None
    distribution: str | None = None
    hooks: tuple[str, ...] = ()
    failed: str | None = None
    first_party: bool = False
    source: str = "entry_point"  # or "object" for plugins passed to Kernel.create
    traceback: str | None = None  # the failure's traceback, when an exception caused it


@dataclass(slots=True)
class Registry:
    """Transports, providers, commands, tools, storage backends, run buses, price tables and config
    sections, by name."""

    transports: dict[str, TransportSpec] = field(default_factory=dict)
    providers: dict[str, ProviderSpec] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    storage: dict[str, StorageSpec] = field(default_factory=dict)
    buses: dict[str, RunBusSpec] = field(default_factory=dict)
    #: ``config.toml`` tables plugins read (``mcp_servers``, ``delegation``), by table name.
    config_sections: dict[str, ConfigSection] = field(default_factory=dict)
    prices: dict[str, PriceSource] = field(default_factory=dict)
    #: Wire-protocol documents for ``hermes schema export``, by protocol name.
    schemas: dict[str, SchemaSpec] = field(default_factory=dict)
    #: Tracing back-ends (docs/observability.md), by name.
    tracers: dict[str, TracerSpec] = field(default_factory=dict)
    ledgers: dict[str, LedgerSpec] = field(default_factory=dict)
    plugins: list[PluginRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Tools only one session sees (servers an editor passed for that session), by session id.
    session_tools: dict[str, dict[str, ToolSpec]] = field(default_factory=dict)

    def plugin(self, name: str) -> PluginRecord | None:
        """Return the record of plugin ``name``, if loaded or attempted."""
        for record in self.plugins:
            if record.name == name:
                return record
        return None

    @property
    def failures(self) -> list[PluginRecord]:
        """Plugins that failed to load or register."""
        return [p for p in self.plugins if p.failed]

    def command(self, name: str) -> CommandSpec | None:
        """Find a command by name or alias (without the leading slash)."""
        spec = self.commands.get(name)
        if spec is not None:
            return spec
        for candidate in self.commands.values():
            if name in candidate.aliases:
                return candidate
        return None

    # -- tools added and removed while the kernel runs (MCP servers and the like) ---------------
    def add_tool(self, spec: ToolSpec, *, owner: str, session_id: str | None = None) -> None:
        """Register a tool at run time, for every session or (``session_id``) for one only.

        :raises ConfigError: when the name is taken (a plugin's tool, another source's, or one of
            the same session); nothing is replaced.
        """
        from hermes_core.errors import ConfigError

        if session_id is None:
            taken = spec.name in self.tools
        else:
            taken = spec.name in self.tools or spec.name in self.session_tools.get(session_id, {})
        if taken:
            holder = self.owners.get(("tools", spec.name), "another session source")
            raise ConfigError(f"tool {spec.name!r} is already registered (by {holder})")
        if session_id is None:
            self.tools[spec.name] = spec
            self.owners[("tools", spec.name)] = owner
        else:
            self.session_tools.setdefault(session_id, {})[spec.name] = spec

    def remove_tool(self, name: str, *, session_id: str | None = None) -> bool:
        """Remove a tool added with :meth:`add_tool`; returns whether it was there."""
        if session_id is not None:
            table = self.session_tools.get(session_id, {})
            found = table.pop(name, None) is not None
            if not table:
                self.session_tools.pop(session_id, None)
            return found
        self.owners.pop(("tools", name), None)
        return self.tools.pop(name, None) is not None

    def forget_session_tools(self, session_id: str) -> None:
        """Drop every tool registered for one session (it closed)."""
        self.session_tools.pop(session_id, None)

    def tool(self, name: str, session_id: str | None = None) -> ToolSpec | None:
        """Find a tool by name: the session's own tools first, then everyone's."""
        if session_id is not None:
            spec = self.session_tools.get(session_id, {}).get(name)
            if spec is not None:
                return spec
        return self.tools.get(name)

    def tools_for(self, session_id: str | None) -> list[ToolSpec]:
        """Every tool a session may see: everyone's tools, then its own."""
        own = self.session_tools.get(session_id, {}) if session_id is not None else {}
        return [*self.tools.values(), *own.values()]
