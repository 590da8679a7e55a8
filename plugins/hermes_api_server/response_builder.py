"""Build Responses output items and stream events from the core's events
(docs/reference/api-server.md#response-object, #responses-stream)."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, assert_never

from hermes_api_server.outcomes import responses_status, usage_dict
from hermes_api_server.response_events import (
    ResponseLifecycleEvent,
    StreamEvent,
    StreamEvents,
    terminal_kind,
    text_part,
)
from hermes_api_server.run_event_models import RunUsage
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

if TYPE_CHECKING:
    from hermes_core import AnyEvent

OUTPUT_CAP = 16_000


def cap_output(text: str) -> str:
    """Cut a tool output over 16,000 characters, with a note."""
    if len(text) <= OUTPUT_CAP:
        return text
    return text[:OUTPUT_CAP] + f"\n[output truncated: {len(text) - OUTPUT_CAP} more characters]"


class ResponseBuilder:
    """Accumulate one turn into a Responses object; optionally produce its stream events."""

    def __init__(
        self, base: dict[str, Any], *, show_reasoning: bool, redact: Callable[[str], str] = str
    ) -> None:
        self.id = "resp_" + secrets.token_hex(16)
        self._redact = redact
        self.base = base
        self.show_reasoning = show_reasoning
        self.created_at = int(time.time())
        self.output: list[dict[str, Any]] = []
        self.events = StreamEvents()
        self._message: dict[str, Any] | None = None
        self._message_index = -1
        self._reasoning: dict[str, Any] | None = None
        self._reasoning_index = -1
        self._calls: dict[str, int] = {}
        self.status = "in_progress"
        self.error: dict[str, Any] | None = None
        self.incomplete: dict[str, Any] | None = None
        self.usage: RunUsage | None = None
        self.hermes: dict[str, Any] = {}
        self.saw_text = False
        # Text and reasoning deltas already queued leave as one delta event each (see feed_batch).
        self._deltas = DeltaCoalescer(self._on_deltas, keep_reasoning=show_reasoning, split_kinds=True)
        self._out: list[StreamEvent] = []
        #: Set for a background response: item ids follow from the response id, so a stream
        #: rebuilt from the event log names the same items (see ``response_background``).
        self.stable_ids = False
        self._minted = 0

    def _new_id(self, prefix: str) -> str:
        if not self.stable_ids:
            return f"{prefix}_{secrets.token_hex(12)}"
        self._minted += 1
        digest = hashlib.sha256(f"{self.id}:{self._minted}".encode()).hexdigest()[:24]
        return f"{prefix}_{digest}"

    def cut_off(self, message: str, code: str = "interrupted", *, shown: int | None = None) -> None:
        """Mark the object as ended by the end of the process that ran it (``failed``, with
        ``error.code`` ``code``). With ``shown``: only the first ``shown`` stream events made
        went out, so the terminal event is numbered right after them."""
        if shown is not None:
            self.events.seq = shown
        if self._message is not None:
            self._message["status"] = "incomplete"
        for index in self._calls.values():
            self.output[index]["status"] = "incomplete"
        self.status = "failed"
        self.error = {"code": code, "message": message}
        self.incomplete = None

    def snapshot(self) -> dict[str, Any]:
        """Return the response object as it stands."""
        obj: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            **self.base,
            "output": [dict(item) for item in self.output],
            "usage": self.usage,
            "error": self.error,
            "incomplete_details": self.incomplete,
            "hermes": {k: v for k, v in self.hermes.items() if v is not None},
        }
        return obj

    def start(self) -> list[StreamEvent]:
        """Return ``response.created`` and ``response.in_progress``."""
        snap = self.snapshot()
        return [
            self.events.lifecycle("response.created", snap),
            self.events.lifecycle("response.in_progress", snap),
        ]

    def _close_message(self, out: list[StreamEvent]) -> None:
        msg = self._message
        if msg is None:
            return
        text = msg["content"][0]["text"]
        index = self._message_index
        out.append(self.events.text_done(msg["id"], index, text))
        out.append(self.events.part("done", msg["id"], index, text))
        msg["status"] = "completed"
        out.append(self.events.item("done", index, msg))
        self._message = None

    def _close_reasoning(self, out: list[StreamEvent]) -> None:
        item = self._reasoning
        if item is None:
            return
        text = item["content"][0]["text"]
        index = self._reasoning_index
        out.append(self.events.reasoning_done(item["id"], index, text))
        item["status"] = "completed"
        out.append(self.events.item("done", index, item))
        self._reasoning = None

    def _open_message(self, out: list[StreamEvent]) -> dict[str, Any]:
        self._close_reasoning(out)
        msg: dict[str, Any] = {
            "id": self._new_id("msg"),
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [text_part("")],
        }
        self.output.append(msg)
        self._message = msg
        self._message_index = len(self.output) - 1
        added = dict(msg, content=[])
        out.append(self.events.item("added", self._message_index, added))
        out.append(self.events.part("added", msg["id"], self._message_index, ""))
        return msg

    def _text(self, text: str, out: list[StreamEvent]) -> None:
        if not text:
            return
        msg = self._message or self._open_message(out)
        msg["content"][0]["text"] += text
        self.saw_text = True
        out.append(self.events.text_delta(msg["id"], self._message_index, text))

    def _reason(self, text: str, out: list[StreamEvent]) -> None:
        if not self.show_reasoning or not text:
            return
        item = self._reasoning
        if item is None:
            self._close_message(out)
            item = {
                "id": self._new_id("rs"),
                "type": "reasoning",
                "status": "in_progress",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": ""}],
            }
            self.output.append(item)
            self._reasoning = item
            self._reasoning_index = len(self.output) - 1
            out.append(self.events.item("added", self._reasoning_index, item))
        item["content"][0]["text"] += text
        out.append(self.events.reasoning_delta(item["id"], self._reasoning_index, text))

    def feed_batch(self, events: list[AnyEvent]) -> list[StreamEvent]:
        """Consume events that are already there; return the stream events they produce.

        Adjacent deltas of one kind become one ``response.output_text.delta`` (or reasoning
        delta); the text and the order of everything else are the same as feeding one by one.
        """
        out = self._out = []
        deltas = self._deltas
        for event in events:
            if deltas.add(event):
                continue
            deltas.flush()
            out.extend(self.feed(event))
        deltas.flush()
        return out

    def _on_deltas(self, text: str | None, reasoning: str | None) -> None:
        # split_kinds: only one of the two is ever pending at a time.
        if reasoning is not None:
            self._reason(reasoning, self._out)
        if text is not None:
            self._text(text, self._out)

    def feed(self, event: AnyEvent) -> list[StreamEvent]:
        """Consume one core event; return the stream events it produces."""
        out: list[StreamEvent] = []
        match event:
            case TextDelta():
                self._text(event.text, out)
            case ReasoningDelta():
                self._reason(event.text, out)
            case SegmentStarted():
                self._close_message(out)
                self._close_reasoning(out)
            case ToolAnnounced():
                self._close_message(out)
                self._close_reasoning(out)
                item = {
                    "id": self._new_id("fc"),
                    "type": "function_call",
                    "status": "in_progress",
                    "call_id": event.call_id,
                    "name": event.name,
                    "arguments": json.dumps(event.args_redacted, ensure_ascii=False),
                }
                self.output.append(item)
                index = len(self.output) - 1
                self._calls[event.call_id] = index
                out.append(self.events.item("added", index, item))
                out.append(self.events.arguments_done(item["id"], index, event.name, item["arguments"]))
            case ToolCompleted():
                self._close_message(out)
                index = self._calls.pop(event.call_id, -1)
                if index >= 0:
                    call = self.output[index]
                    call["status"] = "completed"
                    out.append(self.events.item("done", index, call))
                item = {
                    "id": self._new_id("fco"),
                    "type": "function_call_output",
                    "status": "completed",
                    "call_id": event.call_id,
                    "output": cap_output(event.result_text),
                }
                self.output.append(item)
                index = len(self.output) - 1
                out.append(self.events.item("added", index, item))
                out.append(self.events.item("done", index, item))
            case SubagentEvent(kind="start" | "complete"):
                self._subagent(event, out)
            case TurnCompleted():
                if not self.saw_text and event.text:
                    self._text(event.text, out)
                self._close_message(out)
                self._close_reasoning(out)
                for index in self._calls.values():
                    self.output[index]["status"] = "incomplete"
                self._calls.clear()
                self.status, self.error, self.incomplete = responses_status(event)
                self.usage = usage_dict(event)
                if event.warnings:  # what the turn left out, e.g. images_dropped
                    self.hermes["warnings"] = list(event.warnings)
            case (
                TurnStarted()
                | Retrying()
                | ToolDecision()
                | QuestionRequested()
                | QuestionClosed()
                | ToolExecuting()
                | ToolProgress()
                | SteerDelivered()
                | UsageUpdated()
                | TitleChanged()
                | SessionChanged()
                | SessionProblem()
                | BackgroundCompleted()
                | SubagentEvent()
            ):
                pass  # no Responses stream event of their own (usage leaves with the outcome)
            case _:
                assert_never(event)
        return out

    def _subagent(self, event: SubagentEvent, out: list[StreamEvent]) -> None:
        """Show a child agent the way a tool is shown: a ``subagent`` function call when it
        starts, done with a ``function_call_output`` (its answer or error) when it ends."""
        call_id = f"subagent-{event.subagent_id}"
        self._close_message(out)
        self._close_reasoning(out)
        if event.kind == "start":
            args = {"goal": self._redact(event.goal), "task_index": event.task_index, "depth": event.depth}
            self._add_item(
                {
                    "id": self._new_id("fc"),
                    "type": "function_call",
                    "status": "in_progress",
                    "call_id": call_id,
                    "name": "subagent",
                    "arguments": json.dumps(args, ensure_ascii=False),
                },
                out,
                done=False,
            )
            self._calls[call_id] = len(self.output) - 1
            return
        index = self._calls.pop(call_id, -1)
        if index >= 0:
            call = self.output[index]
            call["status"] = "completed"
            out.append(self.events.item("done", index, call))
        text = str(event.payload.get("summary") or "")
        if event.status != "completed":
            text = f"{event.status}: {event.payload.get('error') or ''}"
        item = {
            "id": self._new_id("fco"),
            "type": "function_call_output",
            "status": "completed",
            "call_id": call_id,
            "output": cap_output(self._redact(text)),
        }
        self._add_item(item, out, done=True)

    def _add_item(self, item: dict[str, Any], out: list[StreamEvent], *, done: bool) -> None:
        self.output.append(item)
        index = len(self.output) - 1
        out.append(self.events.item("added", index, item))
        if done:
            out.append(self.events.item("done", index, item))

    def interrupted(self) -> None:
        """Mark the object as cut short by a client disconnect."""
        if self._message is not None:
            self._message["status"] = "incomplete"
        self.status = "incomplete"
        self.incomplete = {"reason": "interrupted"}

    def cancelled(self) -> None:
        """Mark the object as stopped by ``POST /v1/responses/{id}/cancel``."""
        if self._message is not None:
            self._message["status"] = "incomplete"
        self.status = "cancelled"
        self.error = None
        self.incomplete = None

    def terminal_event(self) -> ResponseLifecycleEvent:
        """Return ``response.completed``, ``.failed`` or ``.incomplete`` (a cancelled response's
        too: the stream has no event of its own for it) with the full object."""
        return self.events.lifecycle(terminal_kind(self.status), self.snapshot())
