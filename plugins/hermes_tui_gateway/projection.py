"""How a session's core events become TUI gateway events (docs/reference/tui-gateway.md#events).

:class:`EventProjector` is the half of :class:`hermes_tui_gateway.stream.SessionStream` that
decides, for each core event, which frames it projects to (and which it merges or hides); the
stream numbers, keeps and delivers them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, assert_never

from hermes_core import (
    BackgroundCompleted,
    DeltaCoalescer,
    QuestionClosed,
    QuestionRequested,
    ReasoningDelta,
    Retrying,
    SegmentStarted,
    SessionChanged,
    SessionProblem,
    SteerDelivered,
    SubagentEvent,
    TextDelta,
    TitleChanged,
    ToolAnnounced,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
    ToolProgress,
    TurnCompleted,
    TurnStarted,
    UsageUpdated,
)
from hermes_tui_gateway import encode
from hermes_tui_gateway.wire import MessageStart, ToolProgressPayload, UsageObj

if TYPE_CHECKING:
    from hermes_core import AnyEvent, Session

# The Ink TUI's live tail (its LIVE_RENDER_MAX_CHARS): past it a redraw costs no more.
LONG_REPLY_CHARS = 16_000
# tool-detail levels of config key `verbose` (docs/reference/tui-gateway.md#configuration-and-models)
VERBOSE = ("off", "new", "all", "verbose")


class EventProjector:
    """Turns one core event into the TUI events it shows (mixed into ``SessionStream``)."""

    if TYPE_CHECKING:
        session: Session
        session_id: str
        verbose: str
        collect: list[dict[str, Any]] | None
        last_usage_obj: UsageObj | None
        open_tasks: set[str]
        turn_subagents: dict[str, None]
        on_tree: Callable[[list[str]], None] | None
        _deltas: DeltaCoalescer
        _delta_kind: type | None
        _delta_seq: int
        _streamed: int
        _timer: asyncio.TimerHandle | None
        _tool_args: dict[str, Any]
        _tool_names: dict[str, str]
        _last_usage: float

        def emit(self, type_: str, payload: Mapping[str, Any] | None = None) -> None: ...
        def emit_info(self, force: bool = False) -> None: ...
        def merge_window(self) -> float: ...
        def _flush(self) -> None: ...

    def _tools_visible(self) -> bool:
        return self.verbose != "off"

    def _on_event(self, ev: AnyEvent) -> None:
        match ev:
            case TextDelta() | ReasoningDelta():
                # Runs of one kind merge for merge_window(); the other kind or MAX_BUFFER_CHARS
                # flushes at once (inline: this runs on every streamed token).
                kind = type(ev)
                if kind is not self._delta_kind and self._deltas.pending:
                    self._flush()
                self._delta_kind = kind
                self._delta_seq = ev.seq
                self._deltas.add(ev)
                self._streamed += len(ev.text)
                if self.collect is None and self._timer is None and self._deltas.pending:
                    self._timer = asyncio.get_running_loop().call_later(self.merge_window(), self._flush)
            case TurnStarted():
                self._streamed = 0
                payload: MessageStart = {}
                if ev.user_row_id is not None:
                    payload["user_row_id"] = ev.user_row_id
                if ev.queued:
                    payload["queued"] = True
                self.emit("message.start", payload)
            case TurnCompleted():
                model = self.session.info().model
                done = encode.message_complete(ev, model, self.session.kernel.redactor)
                self.last_usage_obj = done["usage"]
                self.emit("message.complete", done)
                self._streamed = 0
                self._tool_args.clear()
                self._tool_names.clear()
                if self.turn_subagents and self.on_tree is not None:
                    self.on_tree(list(self.turn_subagents))
                self.turn_subagents.clear()
            case SessionChanged():
                # A replay cannot tell which change the live stream showed: it shows each.
                self.emit_info(force=self.collect is not None)
            case ToolAnnounced():
                # The TUI closes the live segment at a tool call; the next text starts a new tail.
                self._streamed = 0
                self._tool_args[ev.call_id] = ev.args_redacted
                self._tool_names[ev.call_id] = ev.name
                if self._tools_visible() or ev.name == "clarify":
                    started = encode.tool_start(ev)
                    if self.verbose == "verbose":
                        started["args_text"] = encode.args_text(ev.args_redacted)
                    self.emit("tool.start", started)
            case ToolProgress():
                name = self._tool_names.get(ev.call_id, "")
                if self._tools_visible() or name == "clarify":
                    progress: ToolProgressPayload = {
                        "tool_id": ev.call_id,
                        "name": name,
                        "preview": self.session.kernel.redactor(ev.tail),
                    }
                    self.emit("tool.progress", progress)
            case ToolCompleted():
                finished = encode.tool_complete(
                    ev, self._tool_args.get(ev.call_id), self.session.kernel.redactor, str(self.session.cwd)
                )
                if self.verbose == "verbose":
                    finished["result_text"] = finished["result"]
                if (
                    self._tools_visible()
                    or "inline_diff" in finished
                    or ev.todos is not None
                    or ev.name == "clarify"
                ):
                    self.emit("tool.complete", finished)
            case QuestionRequested():
                self.emit(*encode.question_request(ev))
            case QuestionClosed():
                expired = encode.question_expire(ev)
                if expired is not None:
                    self.emit(*expired)
            case SteerDelivered():
                self.emit("status.update", {"kind": "steer", "text": f"steer delivered ({ev.chars} chars)"})
            case Retrying():
                text = f"{ev.kind}: retrying in {ev.wait_s:.1f}s (attempt {ev.attempt})"
                self.emit("status.update", {"kind": "retry", "text": text})
            case UsageUpdated():
                now = time.monotonic()
                usage = encode.usage_obj(ev.usage, self.session.info().model)
                if now - self._last_usage >= 1.0 and usage != self.last_usage_obj:
                    self._last_usage = now
                    self.last_usage_obj = usage
                    self.emit("session.usage", {"usage": usage})
            case TitleChanged():
                self.emit("session.title", {"session_id": self.session_id, "title": ev.title})
            case BackgroundCompleted():
                self.open_tasks.discard(ev.task_id)
                self.emit(
                    "background.complete", {"task_id": ev.task_id, "text": ev.text, "status": ev.status}
                )
            case SessionProblem():
                self.emit("error", {"message": ev.message, "code": ev.code})
            case SubagentEvent():
                if ev.turn_id is not None:
                    self.turn_subagents[ev.subagent_id] = None
                elif ev.kind == "complete" and self.on_tree is not None:
                    # A background child ended after its turn: store its tree again, settled.
                    self.on_tree([ev.subagent_id])
                self.emit(f"subagent.{ev.kind}", encode.subagent(ev, self.session.kernel.redactor))
            case SegmentStarted() | ToolDecision() | ToolExecuting():
                pass  # no frame of their own: the tool.* frames carry the tool's state
            case _:
                assert_never(ev)
