"""One tool round: announce, decide, ask, execute and record each call of a model response.

Order per call (docs/reference/core.md#the-turn-loop, #events, #approvals): ``ToolAnnounced`` →
``ToolDecision`` → a question if the decision is ``ask`` → ``ToolExecuting`` → run → ``ToolCompleted``
(exactly once per announced call, also on denial, cancel or crash). After the batch, steer text and
the results of background children that ended meanwhile are delivered.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import tool_policy
from hermes_core.errors import HermesError
from hermes_core.events import (
    QuestionRequested,
    SteerDelivered,
    ToolAnnounced,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
)
from hermes_core.storage import NewRow, Row, StoredToolCall
from hermes_core.subagent import question_route
from hermes_core.subagents import BACKGROUND_MARKER
from hermes_core.tool_context import LiveToolContext, run_handler
from hermes_core.tools import ToolResult, ToolSpec
from hermes_core.turn import trace
from hermes_core.workspace import expand_home

if TYPE_CHECKING:
    from hermes_core.approvals.denials import DenialMemory
    from hermes_core.kernel import Kernel
    from hermes_core.tracing import Span
    from hermes_core.turn import TurnRun

log = logging.getLogger("hermes.tools")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# The result of a call that needed approval in a turn whose host declared no answerer.
NO_ANSWERER_TEXT = (
    "This tool call needs the user's approval, and nobody can be asked here (the host answers no "
    "approval questions), so it was denied without running. Do not retry it or reach the same result "
    "by other means; tell the user what you wanted to do instead."
)
DENIED_TEXT = (
    "The user declined this tool call{why}. Do not retry it, and do not try to reach the same result "
    "by other means; ask the user how to proceed instead."
)
EARLIER_TEXT = (
    "Denied earlier in this turn: the user declined a call with the same effect. "
    "Do not retry it by other means."
)


@dataclass(slots=True)
class _Call:
    """One tool call of a round, as it goes from announced to completed."""

    stored: StoredToolCall
    spec: ToolSpec | None
    args: dict[str, Any] | None
    error: str | None
    paths: tuple[Path, ...] = ()
    command: str | None = None
    started: float = 0.0
    completed: bool = False
    span: Span | None = None  # the call's ``execute_tool`` span, when tracing


class ToolRound:
    """Runs the tool calls of one assistant row."""

    def __init__(self, run: TurnRun, assistant: Row) -> None:
        self.turn = run
        self.session = run.session
        self.kernel: Kernel = run.kernel
        self.assistant = assistant
        self.current: LiveToolContext | None = None
        self.pending: list[_Call] = []
        self.results: list[NewRow] = []
        self.images = False  # whether a result of this round carries images
        self._executing: asyncio.Future[Any] | None = None

    def cancel(self) -> None:
        """Ask the running tool to stop (its ``cancelled`` event is set)."""
        if self.current is not None:
            self.current.cancelled.set()

    async def abandon(self) -> None:
        """After an interrupt: complete every announced call and save what ran."""
        for call in self.pending:
            if not call.completed:
                self._completed(
                    call, ToolResult("Interrupted by the user before it finished.", is_error=True)
                )
        if self.results:
            try:
                await self.session.append_rows(self.results)
            except Exception:
                log.warning("could not save interrupted tool results", exc_info=True)
            self.results = []

    async def run(self) -> None:
        """Run every call in order, then persist results and deliver steer text."""
        self.pending = [self._parse(c) for c in self.assistant.tool_calls]
        for call in self.pending:
            await self._one(call)
        steer = self.turn.steer_buffer
        if steer and self.results:
            text = "\n\n".join(steer)
            self.turn.steer_buffer = []
            last = self.results[-1]
            from dataclasses import replace

            self.results[-1] = replace(last, content=last.content + "\n\n[User guidance] " + text)
            self.session.emit(
                SteerDelivered(session_id=self.session.id, turn_id=self.turn.turn_id, chars=len(text))
            )
        notes = self.kernel.sessions.children.take_notes(self.session.id) if self.results else []
        if notes:
            # Background children that ended during this turn (docs/delegation.md#result).
            from dataclasses import replace

            last = self.results[-1]
            self.results[-1] = replace(last, content=last.content + BACKGROUND_MARKER + "\n".join(notes))
        results, self.results = self.results, []
        self.images = any(r.parts for r in results)
        await self.session.append_rows(results)

    def _parse(self, stored: StoredToolCall) -> _Call:
        spec = tool_policy.visible_tool(self.kernel, self.session, stored.name, self.turn.answerable)
        try:
            args = json.loads(stored.arguments) if stored.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return _Call(stored, spec, None, f"invalid JSON arguments: {exc}")
        if not isinstance(args, dict):
            return _Call(stored, spec, None, "arguments must be a JSON object")
        if spec is None:
            return _Call(stored, None, args, f"unknown tool: {stored.name}")
        cwd = self.session.cwd
        paths: list[Path] = []
        for name in spec.path_args:
            value = args.get(name)
            if isinstance(value, str) and value:
                p = expand_home(value)  # a model's ``~nobody/x`` stays a relative path
                paths.append((p if p.is_absolute() else cwd / p).resolve())
        if spec.path_args and not paths and spec.kind in ("read", "search"):
            paths.append(cwd.resolve())
        command = args.get(spec.command_arg) if spec.command_arg else None
        return _Call(stored, spec, args, None, tuple(paths), command if isinstance(command, str) else None)

    async def _one(self, call: _Call) -> None:
        session, run = self.session, self.turn
        spec = call.spec
        if run.span is not None:
            kind = spec.kind if spec else "other"
            call.span = trace.open_tool(run, call.stored, kind)
        ctx = LiveToolContext(self, call.stored.call_id, call.paths)
        if call.span is not None:
            ctx.traceparent = call.span.traceparent()
        title, line = self._describe(call)
        change = await self._preview(call, ctx)
        session.emit(
            ToolAnnounced(
                session_id=session.id,
                turn_id=run.turn_id,
                call_id=call.stored.call_id,
                name=call.stored.name,
                kind=spec.kind if spec else "other",
                title=title,
                args_redacted=self.kernel.redactor.obj(call.args or {}),  # type: ignore[arg-type]
                preview=line,
                paths=tuple(str(p) for p in call.paths),
                proposed_change=change,
            )
        )
        if call.error is not None or spec is None or call.args is None:
            self._completed(call, ToolResult(call.error or "tool error", is_error=True))
            return
        allowed, why = await self._decide(call)
        if not allowed:
            self._completed(call, ToolResult(why, is_error=True))
            return
        try:
            await session.workspace_ready()  # a new session's folder is made on first use
        except HermesError as exc:
            failure = f"the session's workspace folder {session.cwd} cannot be made: {exc}"
            self._completed(call, ToolResult(failure, is_error=True))
            return
        session.set_status("working")
        session.emit(ToolExecuting(session_id=session.id, turn_id=run.turn_id, call_id=call.stored.call_id))
        call.started = time.monotonic()
        self.current = ctx
        try:
            result = await run_handler(spec, call.args, ctx, self.kernel)
        finally:
            self.current = None
        self._completed(call, result)

    def _describe(self, call: _Call) -> tuple[str, str]:
        spec, args = call.spec, call.args or {}
        title = call.stored.name
        line = ""
        if spec is not None and call.args is not None:
            try:
                if callable(spec.title):
                    title = spec.title(args)
                elif spec.title:
                    title = spec.title
                line = spec.describe(args) if spec.describe else json.dumps(args, ensure_ascii=False)
            except Exception as exc:  # a description must never break the turn
                log.debug("describing %s failed: %s", spec.name, exc)
        line = self.kernel.redactor(line.replace("\n", " "))[:200]
        return self.kernel.redactor(title)[:200], line

    async def _preview(self, call: _Call, ctx: LiveToolContext) -> Any:
        """Compute the proposed change on a tool thread, through the session's file access.

        The preview reads the target the same way the handler will (an editor's unsaved buffer
        when the client owns the files), so the change shown and approved is the one made.
        """
        spec = call.spec
        if spec is None or spec.preview is None or call.args is None or not self._previewable(call):
            return None
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.kernel.executor, spec.preview, call.args, ctx)
        except Exception as exc:  # a preview must never break the turn
            log.debug("preview of %s failed: %s", spec.name, exc)
            return None

    def _previewable(self, call: _Call) -> bool:
        """A preview reads the target: only for in-workspace, non-sensitive paths (asked first)."""
        from hermes_core import approvals

        workspace = self.session.cwd.resolve()
        return all(
            approvals.is_inside(p, workspace) and not approvals.is_sensitive_path(p) for p in call.paths
        )

    async def _decide(self, call: _Call) -> tuple[bool, str]:
        from hermes_core import approvals

        session, run, kernel = self.session, self.turn, self.kernel
        spec = call.spec
        assert spec is not None and call.args is not None
        facts = approvals.CallFacts(
            name=spec.name,
            kind=spec.kind,
            paths=call.paths,
            command=call.command,
            workspace=session.cwd.resolve(),
        )
        decisions = tool_policy.policy_decisions(
            kernel, session, call.stored.call_id, spec, call.args, call.paths, call.command
        )
        denials = run_denials(run)
        remembered = tool_policy.remembered_keys(kernel, session)
        verdict = approvals.assess(
            facts, profile=session.profile, decisions=decisions, remembered=remembered, denials=denials
        )
        session.emit(
            ToolDecision(
                session_id=session.id,
                turn_id=run.turn_id,
                call_id=call.stored.call_id,
                decision=verdict.decision,
                sources=tuple(verdict.sources),
            )
        )
        if verdict.decision == "allow":
            return True, ""
        if verdict.decision == "deny":
            denials.record(facts, verdict.keys)
            if verdict.denied_earlier:
                return False, EARLIER_TEXT
            reason = "; ".join(verdict.reasons)
            return False, DENIED_TEXT.format(why=f" (policy: {reason})" if reason else "")
        session.set_status("waiting")
        asks_on, task_id, turn_id = question_route(session, run.turn_id)
        template = QuestionRequested(
            session_id=asks_on,
            turn_id=turn_id,
            request_id="",
            kind="approval",
            timeout_s=kernel.settings.approvals.timeout_s,
            deadline_monotonic=0.0,
            call_id=call.stored.call_id,
            task_id=task_id,
            tool_name=spec.name,
            approval_keys=tuple(verdict.keys),
            choices=tuple(verdict.choices),
            allow_session=verdict.allow_session,
            persistable=verdict.persistable,
            description=kernel.redactor(verdict.description),
            reasons=tuple(verdict.reasons),
            command_redacted=kernel.redactor(call.command) if call.command else None,
            paths=tuple(str(p) for p in call.paths),
        )
        closed = await kernel.questions.ask(template, answerable="approval" in run.answerable)
        choice = closed.value if closed.answered else "deny"
        if choice not in verdict.choices or choice == "deny":
            denials.record(facts, verdict.keys)
            if closed.reason == "no_answerer":
                return False, NO_ANSWERER_TEXT
            why = "" if closed.answered else f" ({closed.reason.replace('_', ' ')})"
            return False, DENIED_TEXT.format(why=why)
        if choice == "session":
            session.remember_approval(verdict.keys)
        elif choice == "always":
            session.remember_approval(verdict.keys)
            try:
                if kernel.allowlist is not None:
                    kernel.allowlist.add(verdict.keys)
            except Exception as exc:
                log.warning("could not save the allowlist: %s", exc)
        return True, ""

    def _completed(self, call: _Call, result: ToolResult) -> None:
        if call.completed:
            return
        call.completed = True
        session, run = self.session, self.turn
        # A surrogate (a file name or output that was not UTF-8) could never be stored or sent.
        text = self.kernel.redactor(_LONE_SURROGATE.sub("\ufffd", result.text))
        session.emit(
            ToolCompleted(
                session_id=session.id,
                turn_id=run.turn_id,
                call_id=call.stored.call_id,
                name=call.stored.name,
                result_text=text,
                is_error=result.is_error,
                duration_s=(time.monotonic() - call.started) if call.started else 0.0,
                file_change=result.file_change,
                todos=result.todos,
                images=result.images,
            )
        )
        if call.span is not None:  # after ToolCompleted, which a tracer may still put on it
            call.span.end(error="tool_error" if result.is_error else None)
        # The kind and title the call was announced with, so a replay shows the same even when
        # the tool is gone by then (a session's MCP server, an uninstalled plugin).
        meta: dict[str, Any] = {
            "is_error": result.is_error,
            "kind": call.spec.kind if call.spec else "other",
            "title": self._describe(call)[0],
        }
        if result.file_change is not None:
            fc = result.file_change
            meta["file_change"] = {"path": fc.path, "old_text": fc.old_text, "new_text": fc.new_text}
        if result.todos is not None:
            meta["todos"] = [
                {"id": t.id, "content": t.content, "status": t.status, "priority": t.priority}
                for t in result.todos
            ]
        self.results.append(
            NewRow(
                role="tool",
                content=text,
                call_id=call.stored.call_id,
                provider_call_id=call.stored.provider_call_id,
                tool_name=call.stored.name,
                parts=result.images,
                meta=meta,
            )
        )
        if session.status == "working":
            session.set_status("streaming")


def run_denials(run: TurnRun) -> DenialMemory:
    """Return the turn's denial memory (docs/reference/core.md#denials-hold-for-the-turn), creating it on
    first use."""
    from hermes_core import approvals

    if run.denials is None:
        run.denials = approvals.DenialMemory()
    return run.denials
