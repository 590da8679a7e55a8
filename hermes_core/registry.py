"""The kernel's registry: every record plugins contributed, attributed to its plugin."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.records import CommandSpec, ProviderSpec, RunBusSpec, StorageSpec, TransportSpec
    from hermes_core.tools import ToolSpec

FIRST_PARTY_DISTRIBUTION = "hermes-agent"
RESERVED_COMMANDS = frozenset({"run", "plugins", "models", "config", "sessions", "version", "help"})


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
    """Transports, providers, commands, tools and storage backends, by name."""

    transports: dict[str, TransportSpec] = field(default_factory=dict)
    providers: dict[str, ProviderSpec] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    storage: dict[str, StorageSpec] = field(default_factory=dict)
    buses: dict[str, RunBusSpec] = field(default_factory=dict)
    plugins: list[PluginRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)

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
