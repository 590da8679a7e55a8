"""Turn the events of a streamed Messages API response into provider chunks.

Text and thinking deltas are yielded as they come; a ``tool_use`` block is yielded as one
complete call when its block stops; usage and the finish reason follow ``message_stop``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hermes_core import (
    Chunk,
    FinishChunk,
    FinishReason,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    UsageChunk,
    provider_kit,
)

_typed = provider_kit.typed_field  # a field of the wrong type is a broken stream

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}


@dataclass(slots=True)
class _ToolBlock:
    id: str
    name: str
    initial: Any
    json_parts: list[str] = field(default_factory=list)


class MessageStreamDecoder:
    """Stateful decoder of one streamed message."""

    def __init__(self) -> None:
        self._tools: dict[int, _ToolBlock] = {}
        self._input_tokens = 0
        self._output_tokens = 0
        self._stop_reason: str | None = None
        self.finished = False

    def feed(self, payload: Any) -> list[Chunk]:
        """Decode one event's data.

        :param payload: the JSON of one event (its ``type`` says which).
        :returns: the chunks it completes, in order.
        :raises provider_kit.UpstreamError: for an ``error`` event.
        :raises ValueError: when the data is not an event object.
        """
        if not isinstance(payload, dict):
            raise ValueError("stream event is not a JSON object")
        kind = payload.get("type")
        if not isinstance(kind, str):
            raise ValueError("stream event has no type")
        if kind == "error":
            raise provider_kit.UpstreamError(payload)
        if kind == "message_start":
            message = _typed(payload, "message", dict) or {}
            self._usage(_typed(message, "usage", dict))
        elif kind == "content_block_start":
            self._block_start(payload)
        elif kind == "content_block_delta":
            return self._block_delta(payload)
        elif kind == "content_block_stop":
            return self._block_stop(payload)
        elif kind == "message_delta":
            delta = _typed(payload, "delta", dict) or {}
            reason = _typed(delta, "stop_reason", str)
            if reason:
                self._stop_reason = reason
            self._usage(_typed(payload, "usage", dict))
        elif kind == "message_stop":
            self.finished = True
            return [
                UsageChunk(input=self._input_tokens, output=self._output_tokens),
                FinishChunk(_STOP_REASONS.get(self._stop_reason or "", "stop")),
            ]
        return []  # ping and event types added later carry nothing for us

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        # Cached prompt tokens are still prompt tokens the call consumed.
        parts = [
            usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if any(isinstance(p, int) for p in parts):
            self._input_tokens = sum(p for p in parts if isinstance(p, int))
        output = usage.get("output_tokens")
        if isinstance(output, int):
            self._output_tokens = output

    def _block_start(self, payload: dict[str, Any]) -> None:
        block = _typed(payload, "content_block", dict) or {}
        if block.get("type") == "tool_use":
            self._tools[_index(payload)] = _ToolBlock(
                str(block.get("id") or ""), str(block.get("name") or ""), block.get("input")
            )

    def _block_delta(self, payload: dict[str, Any]) -> list[Chunk]:
        delta = _typed(payload, "delta", dict) or {}
        kind = delta.get("type")
        if kind == "text_delta":
            text = _typed(delta, "text", str)
            return [TextChunk(text)] if text else []
        if kind == "thinking_delta":
            thought = _typed(delta, "thinking", str)
            return [ReasoningChunk(thought)] if thought else []
        if kind == "input_json_delta":
            tool = self._tools.get(_index(payload))
            fragment = _typed(delta, "partial_json", str)
            if tool is not None and fragment is not None:
                tool.json_parts.append(fragment)
        return []

    def _block_stop(self, payload: dict[str, Any]) -> list[Chunk]:
        tool = self._tools.pop(_index(payload), None)
        if tool is None:
            return []
        arguments = "".join(tool.json_parts).strip()
        if not arguments:
            arguments = json.dumps(tool.initial) if isinstance(tool.initial, dict) and tool.initial else "{}"
        return [ToolCallChunk(ToolCallRequest(id=tool.id, name=tool.name, arguments=arguments))]


def _index(payload: dict[str, Any]) -> int:
    """Return a block event's ``index`` (0 when absent)."""
    index = payload.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError("a content block index is not an integer")
    return index
