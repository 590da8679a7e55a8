"""The ``mcp`` tool source: the configured servers (living with the kernel) and each session's own.

Servers start in the background: :meth:`McpManager.start` and :meth:`McpManager.attach` return at
once and a slow server only delays its own tools. Tools register as ``mcp_<server>_<tool>``
through ``kernel.registry.add_tool``; a name already taken is refused with a warning naming both.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core import ConfigError, ToolResult, ToolServerStatus, ToolSpec

if TYPE_CHECKING:
    from hermes_core import Kernel, ToolContext
    from hermes_mcp.config import ServerConfig
    from hermes_mcp.runner import ServerRunner

log = logging.getLogger("hermes_mcp")
OWNER = "mcp"
MISSING_SDK = "the mcp library is not installed: pip install 'hermes-kernel[mcp]'"


def sdk_available() -> bool:
    """Whether the ``mcp`` SDK can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def _kind(tool: Any) -> str:
    hints = tool.annotations
    if hints is not None and hints.read_only_hint:
        return "read"
    if hints is not None and hints.destructive_hint:
        return "delete"
    return "other"


def _describer(server: str, tool: str) -> Callable[[Mapping[str, Any]], str]:
    def describe(args: Mapping[str, Any]) -> str:
        return f"MCP {server}.{tool}"

    return describe


def read_only(tool: Any) -> bool:
    return bool(tool.annotations is not None and tool.annotations.read_only_hint)


class McpManager:
    """Implements ``hermes_core.ToolSource`` for MCP servers."""

    name = "mcp"

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.available = sdk_available()
        self.configured: dict[str, ServerRunner] = {}
        self.by_session: dict[str, dict[str, ServerRunner]] = {}
        self.problems: list[str] = []
        self.unavailable: list[ServerConfig] = []
        #: (session id or None, registered tool name) → (runner, registered name, asks before running)
        self.tools: dict[tuple[str | None, str], tuple[ServerRunner, str, bool]] = {}
        #: what each connected server offers (spec, only reads), to hand a name back when its
        #: holder goes away
        self.offered: dict[ServerRunner, list[tuple[ToolSpec, bool]]] = {}
        #: per server, its tools that are not registered → why
        self.left_out: dict[ServerRunner, dict[str, str]] = {}

    # -- ToolSource --------------------------------------------------------------------------
    def capabilities(self) -> Mapping[str, bool]:
        return {"stdio": self.available, "http": self.available, "sse": False}

    def status(self, session_id: str | None = None) -> list[ToolServerStatus]:
        out = [self._status(r) for r in self.configured.values()]
        out += [
            ToolServerStatus(
                name=c.name, source="mcp", state="unavailable", error=MISSING_SDK, transport=c.transport
            )
            for c in self.unavailable
        ]
        if session_id is not None:
            out += [self._status(r) for r in self.by_session.get(session_id, {}).values()]
        return out

    def _status(self, runner: ServerRunner) -> ToolServerStatus:
        left_out = self.left_out.get(runner)
        status = runner.status()
        return dataclasses.replace(status, left_out=tuple(left_out)) if left_out else status

    async def reload(self) -> list[ToolServerStatus]:
        """Re-read ``[mcp_servers]``, stop every configured server and start the new set.

        Waits (each server at most its ``connect_timeout_s``) so the answer says how each went.
        """
        section = await self._read_section()
        for runner in list(self.configured.values()):
            await runner.stop()
        self.configured.clear()
        self.unavailable.clear()
        self.start(section)
        waits = [
            asyncio.wait_for(r.ready.wait(), r.config.connect_timeout_s) for r in self.configured.values()
        ]
        await asyncio.gather(*waits, return_exceptions=True)
        return self.status()

    async def attach(self, session_id: str, servers: Sequence[Mapping[str, Any]]) -> list[ToolServerStatus]:
        from hermes_mcp.config import from_acp

        configs = from_acp(servers, session_id, taken=frozenset(self.configured))
        if not configs:
            return []
        if not self.available:
            raise ConfigError(f"MCP servers were passed for this session but {MISSING_SDK}")
        own = self.by_session.setdefault(session_id, {})
        for config in configs:
            if config.name in own:  # session/load again with the same server: keep the running one
                continue
            runner = self._runner(config)
            own[config.name] = runner
            runner.start()
        return [self._status(r) for r in own.values()]

    async def session_closed(self, session_id: str) -> None:
        runners = self.by_session.pop(session_id, {})
        await asyncio.gather(*(r.stop() for r in runners.values()), return_exceptions=True)

    async def settle(self, session_id: str) -> list[ToolServerStatus]:
        """Let the configured servers and ``session_id``'s own finish their first connection
        attempt (at most the longest connect timeout among those still starting); return the
        ones that are not ready, which the turn goes on without."""
        runners = [*self.configured.values(), *self.by_session.get(session_id, {}).values()]
        starting = [r for r in runners if not r.ready.is_set()]
        if starting:
            limit = max(r.config.connect_timeout_s for r in starting)
            waits = asyncio.gather(*(r.ready.wait() for r in starting))
            try:
                await asyncio.wait_for(waits, limit)
            except TimeoutError:
                names = ", ".join(r.name for r in starting if not r.ready.is_set())
                log.warning("MCP servers %s not connected after %g s; turns go on without them", names, limit)
        # A missing SDK (state "unavailable") is said once at start-up in the log, not per session.
        return [self._status(r) for r in runners if r.state not in ("ready", "stopped")]

    # -- the kernel's lifetime ---------------------------------------------------------------
    def start(self, section: Mapping[str, Any] | None = None) -> None:
        """Start every configured server in the background (returns at once)."""
        if section is None:
            section = self.kernel.settings.section("mcp_servers")
        if not section:  # nothing configured: the common start, kept off a host's first answer
            self.problems = []
            return
        from hermes_mcp.config import from_settings

        configs, self.problems = from_settings(section)
        for problem in self.problems:
            log.warning("MCP configuration: %s (this server is left out)", problem)
        if not configs:
            return
        if not self.available:
            self.unavailable = configs
            names = ", ".join(c.name for c in configs)
            log.warning("MCP servers are configured (%s) but %s; they are left out", names, MISSING_SDK)
            return
        for config in configs:
            runner = self._runner(config)
            self.configured[config.name] = runner
            runner.start()

    async def close(self) -> None:
        """Stop every server (configured and per-session): no process is left running."""
        runners = list(self.configured.values())
        for own in self.by_session.values():
            runners.extend(own.values())
        self.configured.clear()
        self.by_session.clear()
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)

    def _entry(self, name: str, session_id: str) -> tuple[ServerRunner, str, bool] | None:
        return self.tools.get((session_id, name)) or self.tools.get((None, name))

    def asks(self, name: str, session_id: str) -> bool:
        """Whether a call of the registered tool ``name`` must ask (untrusted, not read-only)."""
        entry = self._entry(name, session_id)
        return entry is not None and entry[2]

    def server_of(self, name: str, session_id: str) -> str | None:
        entry = self._entry(name, session_id)
        return entry[0].name if entry is not None else None

    # -- helpers -----------------------------------------------------------------------------
    async def _read_section(self) -> Mapping[str, Any]:
        store = self.kernel.store
        if store is None:
            return self.kernel.settings.section("mcp_servers")
        raw = await asyncio.get_running_loop().run_in_executor(None, store.load)
        section = raw.get("mcp_servers", {})
        return section if isinstance(section, Mapping) else {}

    def _runner(self, config: ServerConfig) -> ServerRunner:
        from hermes_mcp.runner import ServerRunner  # only once a server is configured or attached

        return ServerRunner(config, publish=self._publish, withdraw=self._withdraw, spawn=self.kernel.spawn)

    def _publish(self, runner: ServerRunner, tools: list[Any], capabilities: Any) -> int:
        """Register the server's tools and its resource and prompt helpers (replacing what it
        had); return how many were registered.

        Two servers whose tools get the same name (``a.b`` and ``a_b`` sanitise alike): the one
        listed first keeps it (configured servers in ``config.toml`` order, then a session's in
        the editor's order), whichever connected first; the other's tool is left out, logged
        and listed in its status.
        """
        from hermes_mcp.extras import helper_specs

        freed = self._drop(runner)
        config = runner.config
        wanted = [(self._spec(runner, t), read_only(t)) for t in tools if config.wants(t.name)]
        wanted += [(spec, True) for op, spec in helper_specs(runner, capabilities) if config.wants(op)]
        self.offered[runner] = wanted
        self.left_out[runner] = {}
        count = self._register(runner, wanted)
        self._hand_back(freed - self._names_of(runner))
        return count

    def _register(self, runner: ServerRunner, specs: Sequence[tuple[ToolSpec, bool]]) -> int:
        """Register ``specs`` of ``runner``, taking a name from a server listed after it."""
        config = runner.config
        left_out = self.left_out.setdefault(runner, {})
        count = 0
        for spec, only_reads in specs:
            holder = self._holder(spec.name, config.session_id)
            if holder is not None and holder is not runner:
                if self._rank(holder) < self._rank(runner):
                    self._leave_out(runner, spec.name, f"the name is taken by MCP server {holder.name!r}")
                    continue
                self._take_from(holder, spec.name, runner)
            try:
                self.kernel.registry.add_tool(spec, owner=OWNER, session_id=config.session_id)
            except ConfigError as exc:
                self._leave_out(runner, spec.name, str(exc))
                continue
            asks = config.trust == "untrusted" and not only_reads
            self.tools[(config.session_id, spec.name)] = (runner, spec.name, asks)
            left_out.pop(spec.name, None)
            count += 1
        return count

    def _rank(self, runner: ServerRunner) -> tuple[int, int]:
        """Where ``runner`` is listed: configured servers first, then a session's own."""
        session_id = runner.config.session_id
        table = self.configured if session_id is None else self.by_session.get(session_id, {})
        names = list(table)
        return (
            0 if session_id is None else 1,
            names.index(runner.name) if runner.name in names else len(names),
        )

    def _holder(self, name: str, session_id: str | None) -> ServerRunner | None:
        """The server whose tool ``name`` a server of ``session_id`` (None: configured) would
        clash with."""
        for (owner_session, tool), (holder, _name, _asks) in self.tools.items():
            if tool == name and (session_id is None or owner_session in (None, session_id)):
                return holder
        return None

    def _names_of(self, runner: ServerRunner) -> set[str]:
        return {key[1] for key, (owner, _name, _asks) in self.tools.items() if owner is runner}

    def _leave_out(self, runner: ServerRunner, name: str, why: str) -> None:
        self.left_out.setdefault(runner, {})[name] = why
        log.warning("MCP server %s: tool %s left out: %s", runner.name, name, why)

    def _take_from(self, holder: ServerRunner, name: str, winner: ServerRunner) -> None:
        """Unregister ``holder``'s tool ``name``: ``winner`` is listed before it."""
        self.kernel.registry.remove_tool(name, session_id=holder.config.session_id)
        del self.tools[(holder.config.session_id, name)]
        holder.tool_count = max(0, holder.tool_count - 1)
        self._leave_out(holder, name, f"the name is taken by MCP server {winner.name!r}, listed before it")

    def _drop(self, runner: ServerRunner) -> set[str]:
        """Unregister every tool of ``runner``; return their names."""
        freed: set[str] = set()
        for key, (owner, _tool, _asks) in list(self.tools.items()):
            if owner is runner:
                self.kernel.registry.remove_tool(key[1], session_id=runner.config.session_id)
                del self.tools[key]
                freed.add(key[1])
        return freed

    def _hand_back(self, names: set[str]) -> None:
        """Offer freed tool names to the servers that were left without them, best listed first."""
        if not names:
            return
        waiting = sorted(
            (r for r, left in self.left_out.items() if names & set(left) and r in self.offered),
            key=self._rank,
        )
        for runner in waiting:
            specs = [(spec, reads) for spec, reads in self.offered[runner] if spec.name in names]
            specs = [(spec, reads) for spec, reads in specs if spec.name in self.left_out[runner]]
            runner.tool_count += self._register(runner, specs)

    def _withdraw(self, runner: ServerRunner) -> None:
        """The server stopped or lost its connection: its tools go, and a name it held goes to the
        next server offering it."""
        freed = self._drop(runner)
        self.offered.pop(runner, None)
        self.left_out.pop(runner, None)
        self._hand_back(freed)

    def _spec(self, runner: ServerRunner, tool: Any) -> ToolSpec:
        from hermes_mcp.naming import tool_name

        server = runner.name
        remote = tool.name

        async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            from hermes_mcp.results import to_tool_result

            trace = getattr(ctx, "traceparent", None)
            return to_tool_result(await runner.call(remote, dict(args), traceparent=trace))

        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        hints = tool.annotations
        label = (hints.title if hints is not None and hints.title else None) or tool.title or remote
        description = (tool.description or label).strip()
        return ToolSpec(
            name=tool_name(server, remote),
            description=f"{description}\n(MCP server {server}, tool {remote})",
            schema=schema,
            handler=handler,
            kind=_kind(tool),
            title=f"{server}: {label}",
            toolset=f"mcp:{server}",
            emoji="🔌",
            describe=_describer(server, remote),
        )
