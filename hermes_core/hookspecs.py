"""Hook specifications of the ``hermes`` pluggy project.

Hooks are synchronous declarations returning typed records; async behaviour lives in the objects
they return. Collection hooks (plural nouns) may return one record or a list of them; the loader
calls them one implementation at a time so every record is attributed to its plugin. Every hook
here has a heading in ``docs/plugin-hooks.md`` (a test checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from hermes_core.events import Event
    from hermes_core.kernel import Kernel
    from hermes_core.records import (
        CommandSpec,
        ConfigSection,
        LedgerSpec,
        PolicyDecision,
        PriceSource,
        ProviderSpec,
        RunBusSpec,
        SchemaSpec,
        StorageSpec,
        ToolCallInfo,
        TransportSpec,
    )
    from hermes_core.session.live import Session
    from hermes_core.tools import ToolSpec
    from hermes_core.tracing import TracerSpec

PROJECT = "hermes"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def hermes_transports() -> TransportSpec | Sequence[TransportSpec] | None:
    """Declare protocol front-ends; the CLI builds ``hermes <name>`` for each."""


@hookspec
def hermes_model_providers() -> ProviderSpec | Sequence[ProviderSpec] | None:
    """Declare model providers for the resolver, switcher and catalog."""


@hookspec
def hermes_price_sources() -> PriceSource | Sequence[PriceSource] | None:
    """Declare per-model price tables shown by the model catalog's picker surfaces."""


@hookspec
def hermes_slash_commands() -> CommandSpec | Sequence[CommandSpec] | None:
    """Declare slash commands, available on every surface."""


@hookspec
def hermes_storage_backends() -> StorageSpec | Sequence[StorageSpec] | None:
    """Declare storage backends (``storage.backend`` picks one)."""


@hookspec
def hermes_run_buses() -> RunBusSpec | Sequence[RunBusSpec] | None:
    """Declare run buses (``bus.backend`` picks one; ``memory`` is built in)."""


@hookspec
def hermes_tracers() -> TracerSpec | Sequence[TracerSpec] | None:
    """Declare tracing back-ends (docs/observability.md); the first one configured is used."""


@hookspec
def hermes_budget_ledgers() -> LedgerSpec | Sequence[LedgerSpec] | None:
    """Declare where budget buckets live (docs/reference/budgets.md); the first that builds wins."""


@hookspec
def hermes_schemas() -> SchemaSpec | Sequence[SchemaSpec] | None:
    """Describe wire protocols for ``hermes schema export`` (one document per protocol)."""


@hookspec
def hermes_tools() -> ToolSpec | Sequence[ToolSpec] | None:
    """Declare tools the agent may call."""


@hookspec
def hermes_config_sections() -> ConfigSection | Sequence[ConfigSection] | None:
    """Declare the ``config.toml`` tables a plugin reads, so their keys are known and checked."""


@hookspec
def hermes_lifespan(kernel: Kernel) -> AbstractAsyncContextManager[Any] | None:
    """Return an async context manager entered when the kernel starts and left when it stops."""


@hookspec
def hermes_on_event(session: Session, event: Event) -> None:
    """Observe every event after delivery; must not block, exceptions are logged."""


@hookspec
def hermes_before_tool_call(session: Session, call: ToolCallInfo) -> PolicyDecision | None:
    """Judge a tool call; all results are combined deny > ask > allow > None."""
