"""One MCP server, held open by one task on the kernel's loop.

The SDK's cancel scopes must be entered and left by the same task, so the task that connects is
the one that calls: tool calls are queued to it and each runs as a child of its task group. The
task connects, lists the tools, publishes them, then serves calls until the server goes away
(a call finds the connection closed, a call or the keepalive times out). It then reconnects
after a backoff; after ``MAX_FAILURES`` failures in a row the circuit opens and the tools are
withdrawn until the next reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_core import ToolError, ToolServerStatus
from hermes_mcp.config import ServerConfig

log = logging.getLogger("hermes_mcp")
MAX_FAILURES = 5
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
HEALTHY_AFTER_S = 60.0  # a connection that lived this long resets the failure count
KEEPALIVE_S = 30.0


@dataclass(slots=True)
class _Call:
    op: str  # call, list_resources, read_resource, list_prompts, get_prompt
    args: dict[str, Any]
    future: asyncio.Future[Any]
    started: float = field(default_factory=time.perf_counter)


class _Lost(Exception):
    """The connection is gone (or hung): reconnect."""


class ServerRunner:
    """Keeps one server connected and runs its calls; ``publish`` gets its tool list."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        publish: Callable[[ServerRunner, list[Any], Any], int],
        withdraw: Callable[[ServerRunner], None],
        spawn: Callable[[Any, str], asyncio.Task[Any]],
    ) -> None:
        self.config = config
        self.state = "starting"
        self.error: str | None = None
        self.tool_count = 0
        self.failures = 0
        self.ready = asyncio.Event()  # set once the first attempt finished (ready or not)
        self._publish = publish
        self._withdraw = withdraw
        self._spawn = spawn
        self._queue: asyncio.Queue[_Call | None] = asyncio.Queue()
        self._stopping = False
        self._was_ready = False
        self._task: asyncio.Task[Any] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        """Start the server's task; returns at once (nothing waits for the server)."""
        self._task = self._spawn(self._run(), f"mcp-{self.name}")

    async def stop(self) -> None:
        """Close the connection (the SDK ends a stdio server's process group) and end the task."""
        self._stopping = True
        self._withdraw(self)
        self._queue.put_nowait(None)
        task = self._task
        if task is not None and not task.done() and self.state != "ready":
            task.cancel()  # connecting or waiting to reconnect: nothing to close politely
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 10)
            except (TimeoutError, asyncio.CancelledError, Exception):
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self.state = "stopped"
        self._fail_pending("the server was stopped")

    def status(self) -> ToolServerStatus:
        return ToolServerStatus(
            name=self.name,
            source="mcp",
            state=self.state,
            tools=self.tool_count,
            error=self.error,
            session_id=self.config.session_id,
            transport=self.config.transport,
        )

    # -- calls -------------------------------------------------------------------------------
    async def call(self, tool: str, args: dict[str, Any], *, traceparent: str | None = None) -> Any:
        """Run one tool call on the server; a dead, hung or stopped server is a ``ToolError``.

        :param traceparent: the calling span's W3C ``traceparent``, sent as ``params._meta.traceparent``
            so a traced server continues the trace (docs/observability.md#propagation).
        """
        return await self.request("call", {"name": tool, "arguments": args, "traceparent": traceparent})

    async def request(self, op: str, args: dict[str, Any]) -> Any:
        """Run one request (a tool call, or a resource or prompt request) through the task."""
        if self.state != "ready":
            why = f": {self.error}" if self.error else ""
            raise ToolError(f"MCP server {self.name!r} is not available ({self.state}{why})")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Call(op, args, future))
        try:
            # The SDK enforces timeout_s; the margin only covers a task that stopped answering.
            # Without a shield, cancelling this wait (an interrupt) cancels the future, and with it
            # the request in the server's task.
            return await asyncio.wait_for(future, self.config.timeout_s + 5)
        except TimeoutError:
            raise ToolError(
                f"MCP server {self.name!r} did not answer within {self.config.timeout_s:g} s"
            ) from None

    def _fail_pending(self, why: str) -> None:
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is not None and not item.future.done():
                item.future.set_exception(ToolError(f"MCP server {self.name!r}: {why}"))

    async def _one_call(self, client: Any, item: _Call, lost: asyncio.Event) -> None:
        import anyio
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        timeout = self.config.timeout_s
        try:
            with anyio.CancelScope() as scope:
                # An interrupted turn cancels its wait: stop the request too (the SDK tells the server).
                item.future.add_done_callback(lambda f: scope.cancel() if f.cancelled() else None)
                result = await _send(client, item, timeout)
            if scope.cancelled_caught:
                return
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._set(item, ToolError(f"MCP server {self.name!r} closed the connection during the call"))
                lost.set()
            elif exc.code == REQUEST_TIMEOUT:
                self._set(item, ToolError(f"MCP server {self.name!r} did not answer within {timeout:g} s"))
                lost.set()
            elif not item.future.done():
                item.future.set_exception(
                    ToolError(f"MCP server {self.name!r} refused the call: {exc.error.message}")
                )
        except Exception as exc:
            self._set(item, ToolError(f"MCP server {self.name!r} failed during the call: {exc!r}"))
            lost.set()
        else:
            if not item.future.done():
                item.future.set_result(result)

    def _set(self, item: _Call, exc: Exception) -> None:
        """Fail a call whose connection is lost; new calls are refused until it is back."""
        self._set_state("restarting", str(exc))
        if not item.future.done():
            item.future.set_exception(exc)

    # -- the server's task -------------------------------------------------------------------
    def _set_state(self, state: str, error: str | None = None) -> None:
        self.state, self.error = state, error

    async def _run(self) -> None:
        # Importing the SDK takes a second or more on a busy machine: never on the event loop.
        await asyncio.get_running_loop().run_in_executor(None, load_sdk)
        while not self._stopping:
            began = time.monotonic()
            self._was_ready = False
            try:
                await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # an ExceptionGroup from the SDK's task groups too
                if self._stopping:
                    break
                self._set_state("restarting", _describe(exc, self.config.command))
                # A crash of a working server always warns; retries that fail again only inform.
                level = logging.WARNING if self.failures == 0 or self._was_ready else logging.INFO
                log.log(level, "MCP server %s: %s", self.name, self.error)
            finally:
                self.ready.set()
            if self._stopping:
                break
            self._withdraw_if_failing(time.monotonic() - began)
            if self.state == "circuit_open":
                self._fail_pending(self.error or "circuit open")
                return
            self._fail_pending(f"connection lost ({self.error}); reconnecting")
            await asyncio.sleep(BACKOFF_S[min(self.failures, len(BACKOFF_S)) - 1])

    def _withdraw_if_failing(self, lived: float) -> None:
        self.failures = 1 if lived >= HEALTHY_AFTER_S else self.failures + 1
        if self.failures >= MAX_FAILURES:
            self._withdraw(self)
            self.tool_count = 0
            self._set_state(
                "circuit_open", f"{self.failures} failures in a row ({self.error}); /reload-mcp retries"
            )
            log.warning("MCP server %s: circuit open after %d failures", self.name, self.failures)

    async def _connect_and_serve(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            client = await self._connect(stack)
            tools = await self._list_tools(client)
            self.tool_count = self._publish(self, tools, client.server_capabilities)
            self._set_state("ready")
            self._was_ready = True
            self.ready.set()
            await self._serve(client)

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp import Client, StdioServerParameters
        from mcp.types import Implementation

        cfg = self.config
        target: Any
        if cfg.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(cfg.headers), timeout=httpx2.Timeout(cfg.connect_timeout_s, read=300)
                )
            )
            target = streamable_http_client(cfg.url, http_client=http)
        else:
            assert cfg.command is not None
            target = StdioServerParameters(
                command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd
            )
        client = Client(
            target,
            read_timeout_seconds=cfg.connect_timeout_s,
            client_info=Implementation(name="hermes", version="0.1.0"),
            cache=None,
        )
        # A stdio server's stderr is inherited (never stdout, which carries a transport's frames).
        await stack.enter_async_context(client)
        return client

    async def _list_tools(self, client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _serve(self, client: Any) -> None:
        import anyio

        lost = asyncio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(self._keepalive, client, lost)
            while True:
                getter = asyncio.ensure_future(self._queue.get())
                waiter = asyncio.ensure_future(lost.wait())
                try:
                    await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                    if not getter.done():
                        getter.cancel()
                if lost.is_set():
                    if getter.done() and not getter.cancelled() and getter.result() is not None:
                        self._queue.put_nowait(getter.result())  # failed by _run with the reason
                    group.cancel_scope.cancel()
                    raise _Lost(self.error or "the connection was lost")
                item = getter.result()
                if item is None:
                    group.cancel_scope.cancel()
                    return
                group.start_soon(self._one_call, client, item, lost)

    async def _keepalive(self, client: Any, lost: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            try:
                # ping is gone from the newest protocol revision; listing the tools works on all.
                await client.list_tools()
            except Exception as exc:
                self.error = f"keepalive failed: {_describe(exc)}"
                lost.set()
                return


async def _send(client: Any, item: _Call, timeout: float) -> Any:
    args = item.args
    if item.op == "call":
        trace = args.get("traceparent")
        meta = {"traceparent": trace} if trace else None
        return await client.call_tool(
            args["name"], args["arguments"], read_timeout_seconds=timeout, meta=meta
        )
    if item.op == "list_resources":
        return await client.list_resources(cursor=args.get("cursor"))
    if item.op == "read_resource":
        return await client.read_resource(args["uri"])
    if item.op == "list_prompts":
        return await client.list_prompts(cursor=args.get("cursor"))
    if item.op == "get_prompt":
        return await client.get_prompt(args["name"], args.get("arguments"))
    raise ValueError(f"unknown MCP request {item.op!r}")


def load_sdk() -> None:
    """Import the parts of the SDK a connection uses (called on a worker thread)."""
    import importlib

    for name in ("anyio", "httpx2", "mcp", "mcp.types", "mcp.client.streamable_http", "mcp_types"):
        importlib.import_module(name)


def _describe(exc: BaseException, command: str | None = None) -> str:
    """One line for the error field: the innermost useful exception of an ExceptionGroup."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or command or exc}"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, _Lost):
        return text
    return f"{type(exc).__name__}: {text}" if not text.startswith(type(exc).__name__) else text
