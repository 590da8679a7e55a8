"""Tool sources: plugins whose tools come from servers started at run time (MCP).

A source registers itself with ``kernel.tool_sources.add(source)`` (usually from its lifespan) and
adds and removes its tools through ``kernel.registry.add_tool`` / ``remove_tool``. Transports and
slash commands reach it only through this owner: they list the servers (``status``), reconnect them
(``reload``) and hand over the servers an editor configured for one session (``attach``). Before a
turn the kernel calls ``settle`` so the turn sees the tools of servers still connecting, and learns
(once per session) which ones it goes on without. When a session closes the kernel calls
``session_closed`` so the servers started for it end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_core.errors import ConfigError

log = logging.getLogger("hermes.tools")


@dataclass(frozen=True, slots=True)
class ToolServerStatus:
    """One server of a tool source, as ``/reload-mcp``, ``reload.mcp`` and ``hermes plugins`` show it.

    :param state: ``starting``, ``ready``, ``restarting``, ``failed``, ``circuit_open``,
        ``stopped`` or ``unavailable`` (the source's library is missing).
    :param session_id: set for a server started for one session only.
    :param left_out: the server's tools that are not registered because their name is taken
        (by a server listed before it, or by another tool).
    """

    name: str
    source: str
    state: str
    tools: int = 0
    error: str | None = None
    session_id: str | None = None
    transport: str = "stdio"
    left_out: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape the transports send."""
        out: dict[str, Any] = {
            "name": self.name,
            "source": self.source,
            "state": self.state,
            "tools": self.tools,
            "transport": self.transport,
        }
        if self.error:
            out["error"] = self.error
        if self.session_id:
            out["session_id"] = self.session_id
        if self.left_out:
            out["left_out"] = list(self.left_out)
        return out


class ToolSource(Protocol):
    """What a tool source offers the kernel; every method runs on the kernel's loop."""

    name: str

    def status(self, session_id: str | None = None) -> list[ToolServerStatus]:
        """The configured servers, plus those of ``session_id`` when given."""
        ...

    def capabilities(self) -> Mapping[str, bool]:
        """Which per-session server transports ``attach`` accepts (``stdio``, ``http``, ``sse``)."""
        ...

    async def reload(self) -> list[ToolServerStatus]:
        """Re-read the configuration and reconnect every configured server."""
        ...

    async def attach(self, session_id: str, servers: Sequence[Mapping[str, Any]]) -> list[ToolServerStatus]:
        """Start servers for one session (raises ``InvalidValue`` for a bad server entry)."""
        ...

    async def session_closed(self, session_id: str) -> None:
        """End the servers started for ``session_id``."""
        ...

    async def settle(self, session_id: str) -> Sequence[ToolServerStatus] | None:
        """Wait until the configured servers and those started for ``session_id`` finished their
        first connection attempt (each at most its connect timeout); return at once when none is
        starting.

        :returns: the servers a turn of ``session_id`` goes on without (not ready after the wait);
            None or empty when every server is ready.
        """
        ...


class ToolSources:
    """The tool sources in this kernel (``kernel.tool_sources``), by name."""

    def __init__(self, redact: Callable[[str], str] = str) -> None:
        self._sources: dict[str, ToolSource] = {}
        self._redact = redact
        #: per session, the servers it was already told it goes on without ("source:name")
        self._told: dict[str, set[str]] = {}

    def add(self, source: ToolSource) -> None:
        """Register a source; a second one of the same name is refused."""
        if source.name in self._sources:
            raise ConfigError(f"a tool source named {source.name!r} is already registered")
        self._sources[source.name] = source

    def remove(self, source: ToolSource) -> None:
        """Unregister a source (its lifespan ended)."""
        if self._sources.get(source.name) is source:
            del self._sources[source.name]

    def get(self, name: str) -> ToolSource | None:
        """The source called ``name`` (``mcp``), if one is registered."""
        return self._sources.get(name)

    def names(self) -> list[str]:
        return sorted(self._sources)

    def status(self, session_id: str | None = None) -> list[ToolServerStatus]:
        """Every source's servers (and ``session_id``'s own)."""
        return [s for source in self._sources.values() for s in source.status(session_id)]

    async def reload(self, name: str | None = None) -> list[ToolServerStatus]:
        """Reconnect the servers of one source (or all) and return their state."""
        out: list[ToolServerStatus] = []
        for source in list(self._sources.values()):
            if name is None or source.name == name:
                out.extend(await source.reload())
        return out

    async def attach(
        self, name: str, session_id: str, servers: Sequence[Mapping[str, Any]]
    ) -> list[ToolServerStatus]:
        """Hand ``servers`` to source ``name`` for one session.

        :raises ConfigError: when no such source is registered (its plugin is not installed).
        """
        source = self._sources.get(name)
        if source is None:
            raise ConfigError(f"no {name} tool source is loaded (is the {name} plugin installed?)")
        return await source.attach(session_id, servers)

    async def settle(self, session_id: str) -> list[str]:
        """Before a turn: let the servers still making their first connection attempt (configured
        ones and the session's own) finish it, so the turn sees their tools from the start.

        Start-up never waits for them; only a turn does, each server at most its connect timeout.

        :returns: one line per server the turn goes on without, each said once per session.
        """
        told = self._told.setdefault(session_id, set())
        notes: list[str] = []
        for source in list(self._sources.values()):
            for status in await source.settle(session_id) or ():
                key = f"{source.name}:{status.name}"
                if key in told:
                    continue
                told.add(key)
                why = f"{status.state}: {status.error}" if status.error else status.state
                notes.append(
                    self._redact(
                        f"{source.name.upper()} server {status.name!r} is not available ({why}); "
                        "going on without its tools"
                    )
                )
        return notes

    async def session_closed(self, session_id: str) -> None:
        """Tell every source a session closed; a failing source is logged, the rest still run."""
        self._told.pop(session_id, None)
        for source in list(self._sources.values()):
            try:
                await source.session_closed(session_id)
            except Exception:
                log.warning(
                    "tool source %s failed to end the servers of %s", source.name, session_id, exc_info=True
                )
