"""One pi turn at a time: a model call's assistant message, its tool calls and ``turn_end``
(docs/reference/pi.md#events).

:class:`TurnEncoder` is the part of :class:`~hermes_pi.runstream.RunStream` that turns a Hermes
turn's model calls and tool rounds into pi turns: the assistant message starts with the first
delta (or when the call ends without one), ends once it is known whether tool calls follow (the
first ``ToolAnnounced``, or the turn's end), and the tool events and results come between it and
``turn_end``. The state it works on is the stream's own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes_pi.assistant import AssistantStream
from hermes_pi.messages import parse_arguments, tool_call_block, tool_result_message, usage_object

if TYPE_CHECKING:
    from hermes_core import Retrying, Session, ToolAnnounced, ToolCompleted, ToolProgress, UsageUpdated


class TurnEncoder:
    """Encode the pi turns of the Hermes turn that runs now."""

    session: Session
    messages: list[dict[str, Any]]
    _send: Callable[[dict[str, Any]], None]
    _send_frame: Callable[[bytes], None]
    _max_retries: Callable[[], int]

    def _init_turns(self) -> None:
        self._turn_id: str | None = None
        self._model: str | None = None
        self._turn_open = False
        self._assistant: AssistantStream | None = None
        self._round: dict[str, Any] | None = None  # the assistant message whose tools run now
        self._turn_message: dict[str, Any] | None = None  # the pi turn's assistant message
        self._results: list[dict[str, Any]] = []
        self._tool_args: dict[str, tuple[str, Any]] = {}
        self._retry_attempt = 0
        self.retry_cancelled = False  # abort_retry stopped the waiting retry
        self._last_turn_usage = (0, 0, 0)
        self._flush_scheduled = False

    @property
    def retrying(self) -> bool:
        """Whether the current turn waits to retry a failed model call."""
        return self._retry_attempt > 0

    # -- deltas -------------------------------------------------------------------------------
    def _delta(self, kind: str, text: str) -> None:
        assistant = self._assistant_for_call()
        assistant.delta(kind, text)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._assistant is not None:
            self._assistant.flush()

    # -- pi turns and model calls ----------------------------------------------------------------------
    def _open_turn(self) -> None:
        if not self._turn_open:
            self._turn_open = True
            self._send({"type": "turn_start"})

    def _close_turn(self) -> None:
        """Send ``turn_end`` for the pi turn that is open, with the tool results it gathered."""
        if not self._turn_open:
            return
        if self._assistant is not None:
            self._finish_assistant("aborted", None)
        message = self._turn_message
        self._turn_open = False
        if message is not None:
            self._send({"type": "turn_end", "message": message, "toolResults": self._results})
        self._round = None
        self._turn_message = None
        self._results = []

    def _call_begins(self) -> None:
        """A model call of the current turn starts (after a tool round: a new pi turn)."""
        if self._round is not None:
            self._close_turn()
        self._open_turn()
        if self._retry_attempt:
            self._send({"type": "auto_retry_end", "success": True, "attempt": self._retry_attempt})
            self._retry_attempt = 0

    def _assistant_for_call(self) -> AssistantStream:
        if self._assistant is None:
            self._call_begins()
            self._assistant = AssistantStream(self._model, time.time(), self._send, self._send_frame)
        return self._assistant

    def _call_ended(self, ev: UsageUpdated) -> None:
        assistant = self._assistant_for_call()
        turn = ev.turn_usage
        before = self._last_turn_usage
        self._last_turn_usage = (turn.input, turn.output, turn.reasoning)
        assistant.usage = usage_object(
            turn.input - before[0], turn.output - before[1], turn.reasoning - before[2]
        )
        assistant.finished_call = True

    def _finish_assistant(self, stop_reason: str, error: str | None, calls: list[Any] | None = None) -> Any:
        assistant = self._assistant
        if assistant is None:
            return None
        self._assistant = None
        message = assistant.finish(stop_reason=stop_reason, calls=calls or (), error=error)
        self.messages.append(message)
        self._turn_message = message
        return message

    def _retrying(self, ev: Retrying) -> None:
        if self._round is not None:
            self._close_turn()
        self._retry_attempt = ev.attempt
        self._send(
            {
                "type": "auto_retry_start",
                "attempt": ev.attempt,
                "maxAttempts": self._max_retries(),
                "delayMs": int(ev.wait_s * 1000),
                "errorMessage": f"{ev.kind} error from the provider",
            }
        )

    # -- tools --------------------------------------------------------------------------------
    def _tool_announced(self, ev: ToolAnnounced) -> None:
        if self._round is None:
            calls = self._row_calls(ev)
            self._assistant_for_call()
            self._round = self._finish_assistant("toolUse", None, calls)
        self._tool_args[ev.call_id] = (ev.name, ev.args_redacted)
        self._send(
            {
                "type": "tool_execution_start",
                "toolCallId": ev.call_id,
                "toolName": ev.name,
                "args": ev.args_redacted,
            }
        )

    def _row_calls(self, ev: ToolAnnounced) -> list[dict[str, Any]]:
        """Every tool call of the model response that asked for ``ev``'s call, from its row."""
        redact = self.session.kernel.redactor.obj
        for row in reversed(self.session.rows):
            if row.role == "assistant" and any(c.call_id == ev.call_id for c in row.tool_calls):
                return [
                    tool_call_block(c.call_id, c.name, parse_arguments(c.arguments, redact))
                    for c in row.tool_calls
                ]
        return [tool_call_block(ev.call_id, ev.name, ev.args_redacted)]

    def _tool_progress(self, ev: ToolProgress) -> None:
        name, args = self._tool_args.get(ev.call_id, ("", {}))
        self._send(
            {
                "type": "tool_execution_update",
                "toolCallId": ev.call_id,
                "toolName": name,
                "args": args,
                "partialResult": {"content": [{"type": "text", "text": ev.tail}], "details": {}},
            }
        )

    def _tool_completed(self, ev: ToolCompleted) -> None:
        self._tool_args.pop(ev.call_id, None)
        result = {"content": [{"type": "text", "text": ev.result_text}], "details": {}}
        record: dict[str, Any] = {
            "type": "tool_execution_end",
            "toolCallId": ev.call_id,
            "toolName": ev.name,
            "result": result,
            "isError": ev.is_error,
        }
        if ev.duration_s:
            record["durationMs"] = int(ev.duration_s * 1000)
        self._send(record)
        message = tool_result_message(ev.call_id, ev.name, ev.result_text, ev.is_error, ev.images, ev.ts)
        self._send({"type": "message_start", "message": message})
        self._send({"type": "message_end", "message": message})
        self._results.append(message)
        self.messages.append(message)
