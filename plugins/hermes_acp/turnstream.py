"""Encode one core turn's events as ACP ``session/update`` notifications
(docs/reference/acp.md#streaming, #tool-calls)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, assert_never

from hermes_acp import permissions, toolcalls
from hermes_acp.replay import plan_update
from hermes_acp.state import CallState
from hermes_acp.subagent_calls import SubagentCalls
from hermes_core import (
    AnyEvent,
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
    TurnOutcome,
    TurnStarted,
    UsageUpdated,
)

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession
    from hermes_core import Usage

PROGRESS_INTERVAL_S = 0.2


class TurnStream:
    """The encoder for one turn; :meth:`finish` sends the end-of-turn updates
    (docs/reference/acp.md#end-of-a-turn)."""

    def __init__(self, conn: AcpConnection, acp_session: AcpSession) -> None:
        """Start encoding.

        :param conn: the connection.
        :param acp_session: the session.
        """
        self.conn = conn
        self.session = acp_session
        self.sid = acp_session.id
        self.todos: Any = None
        self.title: str | None = None
        self._title_before = acp_session.core.info().title
        self.usage: Usage | None = None
        self._asks: set[asyncio.Task[None]] = set()
        self._progress_at: dict[str, float] = {}
        self._args: dict[str, tuple[str, dict[str, Any]]] = {}
        # Deltas already queued behind each other leave as one chunk; text and reasoning never
        # merge across each other, and a new segment (a new messageId) starts a new chunk.
        self._deltas = DeltaCoalescer(self._send_deltas, split_kinds=True)
        self._segment = ""
        self._subagents = SubagentCalls(self._send, acp_session)

    def _send(self, update: dict[str, Any]) -> None:
        self.conn.update(self.sid, update)

    def feed(self, events: list[AnyEvent]) -> None:
        """Encode the events that are already there, merging adjacent deltas of one kind.

        :param events: core events of this turn, in order (one batch of ``Turn.next_events``).
        """
        for event in events:
            self.handle(event)
        self._deltas.flush()

    def handle(self, event: AnyEvent) -> None:
        """Encode one event; a text or reasoning delta waits in the coalescer until :meth:`flush`.

        :param event: a core event of this turn.
        """
        if isinstance(event, TextDelta | ReasoningDelta):
            if event.segment_id != self._segment:
                self._deltas.flush()
                self._segment = event.segment_id
            if event.text:  # an empty delta never was a chunk
                self._deltas.add(event)
            return
        self._deltas.flush()
        match event:
            case UsageUpdated():
                self.usage = event.usage
            case TitleChanged():
                self.title = event.title
            case ToolAnnounced():
                self._on_tool_announced(event)
            case ToolExecuting():
                self._on_tool_executing(event)
            case ToolProgress():
                self._on_tool_progress(event)
            case ToolCompleted():
                self._on_tool_completed(event)
            case QuestionRequested():
                self._on_question_requested(event)
            case QuestionClosed():
                permissions.withdraw(self.conn, self.session, event.request_id)
            case SubagentEvent():
                self._subagents.handle(event)
            case (
                TurnStarted()
                | SegmentStarted()
                | Retrying()
                | ToolDecision()
                | SteerDelivered()
                | SessionChanged()
                | TurnCompleted()
                | SessionProblem()
                | BackgroundCompleted()
            ):
                pass  # no session/update of their own (the prompt's answer carries the outcome)
            case _:
                assert_never(event)

    # ------------------------------------------------------------------ streaming

    def flush(self) -> None:
        """Send the text or reasoning still waiting in the coalescer."""
        self._deltas.flush()

    def _send_deltas(self, text: str | None, reasoning: str | None) -> None:
        # split_kinds: only one of the two is ever pending at a time.
        if reasoning:
            self._send(
                {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": reasoning},
                    "messageId": f"{self._segment}-thought",
                }
            )
        if text:
            self._send(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                    "messageId": self._segment,
                }
            )

    # ------------------------------------------------------------------ tools

    def _on_tool_announced(self, event: ToolAnnounced) -> None:
        update = toolcalls.announce(
            event.call_id,
            event.name,
            event.kind,
            event.title,
            dict(event.args_redacted),
            tuple(event.paths),
            event.proposed_change,
        )
        self.session.calls[event.call_id] = CallState(update)
        self._args[event.call_id] = (event.name, dict(event.args_redacted))
        self._send(update)

    def _on_tool_executing(self, event: ToolExecuting) -> None:
        state = self.session.calls.get(event.call_id)
        if state is not None and state.status == "pending":
            state.status = "in_progress"
            self._send(
                {"sessionUpdate": "tool_call_update", "toolCallId": event.call_id, "status": "in_progress"}
            )

    def _on_tool_progress(self, event: ToolProgress) -> None:
        state = self.session.calls.get(event.call_id)
        if state is None:
            return
        now = time.monotonic()
        if now - self._progress_at.get(event.call_id, 0.0) < PROGRESS_INTERVAL_S:
            return
        self._progress_at[event.call_id] = now
        tail = event.tail[-toolcalls.PROGRESS_LIMIT :]
        self._send(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": event.call_id,
                "content": [toolcalls.text_block(tail)],
            }
        )

    def _on_tool_completed(self, event: ToolCompleted) -> None:
        state = self.session.calls.pop(event.call_id, None)
        if state is None:
            return
        name, args = self._args.get(event.call_id, (event.name, {}))
        failed = event.is_error and not (name == "terminal" and toolcalls.terminal_exited(event.result_text))
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": "failed" if failed else "completed",
            "content": toolcalls.final_content(name, args, event.result_text, event.file_change)
            + [toolcalls.image_block(image) for image in event.images if image.data is not None],
        }
        if name == "search" and not failed:
            found = toolcalls.search_locations(event.result_text, str(self.session.core.cwd))
            if found:
                update["locations"] = found
        self._send(update)
        if event.todos is not None:
            self.todos = event.todos

    # ------------------------------------------------------------------ questions

    def _on_question_requested(self, event: QuestionRequested) -> None:
        if event.kind != "approval":
            return  # the core closes it at once (no_answerer): ACP answers approvals only
        task = asyncio.create_task(permissions.ask(self.conn, self.session, event))
        self._asks.add(task)
        task.add_done_callback(self._asks.discard)

    # ------------------------------------------------------------------ end of turn

    def finish(self, outcome: TurnOutcome | None) -> None:
        """Close every open call, then send plan, title and usage (docs/reference/acp.md#end-of-a-turn order).

        :param outcome: how the turn ended (``None`` when unknown).
        """
        self._deltas.flush()
        for question_id in list(self.session.permissions):
            permissions.withdraw(self.conn, self.session, question_id)
        for task in list(self._asks):
            task.cancel()
        interrupted = outcome is not None and outcome.reason.startswith("interrupted")
        for call_id, state in list(self.session.calls.items()):
            del self.session.calls[call_id]
            if state.status in toolcalls.FINAL:
                continue
            text = "Cancelled" if interrupted else "Ended without a result"
            self._send(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "failed",
                    "content": [toolcalls.text_block(text)],
                }
            )
        if self.todos is not None:
            self._send(plan_update(self.todos))
        title = self.title or self.session.core.info().title
        if title and (self.title or title != self._title_before):
            self._send(
                {
                    "sessionUpdate": "session_info_update",
                    "title": title,
                    "updatedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
        usage = self.usage
        if usage is not None and usage.context_max:
            update: dict[str, Any] = {
                "sessionUpdate": "usage_update",
                "used": max(0, int(usage.context_used or 0)),
                "size": int(usage.context_max),
            }
            if usage.cost_usd is not None:
                update["cost"] = {"amount": float(usage.cost_usd), "currency": "USD"}
            self._send(update)
