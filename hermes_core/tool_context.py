"""The live :class:`~hermes_core.tools.ToolContext` handed to a running tool, and the runner.

Sync handlers run in the kernel's executor threads; every context method they call hands over
to the event loop with ``call_soon_threadsafe`` / ``run_coroutine_threadsafe``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.events import QuestionRequested, ToolProgress
from hermes_core.subagent import question_route
from hermes_core.tools import ToolError, ToolResult, ToolSpec

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.turn.tool_round import ToolRound

log = logging.getLogger("hermes.tools")
TAIL_CHARS = 64 * 1024


class LiveToolContext:
    """What one tool call may use while it runs."""

    def __init__(self, round_: ToolRound, call_id: str, cleared: tuple[Path, ...] = ()) -> None:
        """:param cleared: the call's path arguments, resolved: the approval step already decided
        on them, so :meth:`resolve` accepts them (and what lies below them) even outside the
        workspace."""
        session = round_.session
        kernel: Kernel = round_.kernel
        self._round = round_
        self._kernel = kernel
        self._session = session
        self._loop = asyncio.get_running_loop()
        self.session = session
        self.session_id = session.id
        self.turn_id: str | None = round_.turn.turn_id
        self.answerable: frozenset[str] = round_.turn.answerable
        self.call_id = call_id
        self.cwd = session.cwd
        self.file_access = session.file_access
        tools = kernel.settings.tools
        self.settings: Mapping[str, Any] = {
            "terminal_timeout_s": tools.terminal_timeout_s,
            "output_cap_chars": tools.output_cap_chars,
            "kill_grace_s": 0.5,
            "data_dir": str(kernel.settings.data_dir) if kernel.settings.data_dir else None,
        }
        self.cancelled = threading.Event()
        self._tail = ""
        self._cleared = cleared
        #: The W3C ``traceparent`` of this call's ``execute_tool`` span (None: tracing is off);
        #: a tool that calls out (MCP) or starts a child agent passes it on.
        self.traceparent: str | None = None

    def _emit_progress(self, chunk: str) -> None:
        self._tail = (self._tail + chunk)[-TAIL_CHARS:]
        redact = self._kernel.redactor
        self._session.emit(
            ToolProgress(
                session_id=self.session_id,
                turn_id=self._round.turn.turn_id,
                call_id=self.call_id,
                chunk=redact(chunk),
                tail=redact(self._tail),
            )
        )

    def progress(self, chunk: str) -> None:
        if not chunk:
            return
        if _on_loop(self._loop):
            self._emit_progress(chunk)
        else:
            self._loop.call_soon_threadsafe(self._emit_progress, chunk)

    def resolve(self, path: str) -> Path:
        from hermes_core.workspace import WorkspaceError, resolve_in_workspace

        try:
            return resolve_in_workspace(path, self.cwd, also=self._cleared)
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None

    async def ask_async(self, kind: str, **fields: Any) -> str:
        settings = self._kernel.settings.questions
        timeouts = {
            "clarify": settings.clarify_timeout_s,
            "sudo": settings.sudo_timeout_s,
            "secret": settings.secret_timeout_s,
        }
        if kind not in timeouts:
            raise ToolError(f"cannot ask a {kind!r} question")
        choices = fields.get("choices")
        asks_on, task_id, turn_id = question_route(self._session, self._round.turn.turn_id)
        template = QuestionRequested(
            session_id=asks_on,
            turn_id=turn_id,
            request_id="",
            kind=kind,  # type: ignore[arg-type]
            timeout_s=timeouts[kind],
            deadline_monotonic=0.0,
            call_id=self.call_id,
            task_id=task_id,
            question=fields.get("question"),
            choices=tuple(choices) if choices else None,
            command=self._kernel.redactor(fields["command"]) if fields.get("command") else None,
            env_var=fields.get("env_var"),
            prompt=fields.get("prompt"),
            metadata=fields.get("metadata"),
        )
        self._session.set_status("waiting")
        try:
            answerable = kind in self._round.turn.answerable
            closed = await self._kernel.questions.ask(template, answerable=answerable)
        finally:
            self._session.set_status("working")
        return closed.value

    def ask(self, kind: str, **fields: Any) -> str:
        if _on_loop(self._loop):
            raise RuntimeError("ToolContext.ask blocks; use ask_async from coroutine handlers")
        future = asyncio.run_coroutine_threadsafe(self.ask_async(kind, **fields), self._loop)
        while True:
            try:
                return future.result(timeout=0.2)
            except TimeoutError:
                if self.cancelled.is_set():
                    future.cancel()
                    return ""

    def register_process(self, proc: Any, *, background: bool = False) -> None:
        if background:
            self._session.track_process(proc)

    def unregister_process(self, proc: Any) -> None:
        self._session.untrack_process(proc)

    def store_secret(self, env_var: str, value: str) -> None:
        if _on_loop(self._loop):
            raise RuntimeError("store_secret blocks; call it from a thread")
        from hermes_core.settings_apply import store_secret

        asyncio.run_coroutine_threadsafe(store_secret(self._kernel, env_var, value), self._loop).result(30)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def run_handler(
    spec: ToolSpec, args: dict[str, Any], ctx: LiveToolContext, kernel: Kernel
) -> ToolResult:
    """Run a tool's handler and turn whatever happens into a :class:`ToolResult`."""
    try:
        if inspect.iscoroutinefunction(spec.handler):
            value = await spec.handler(args, ctx)
        else:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(kernel.executor, spec.handler, args, ctx)
            value = await future
            if inspect.isawaitable(value):
                value = await value
    except ToolError as exc:
        return ToolResult(str(exc) or "tool error", is_error=True)
    except asyncio.CancelledError:
        ctx.cancelled.set()
        raise
    except Exception as exc:
        log.warning("tool %s crashed", spec.name, exc_info=True)
        return ToolResult(f"Tool {spec.name} crashed: {type(exc).__name__}: {exc}", is_error=True)
    if isinstance(value, ToolResult):
        return value
    return ToolResult(str(value) if value is not None else "")
