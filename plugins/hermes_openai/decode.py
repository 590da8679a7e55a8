"""Turn decoded ``chat.completion.chunk`` objects into provider chunks.

Tool-call fragments arrive spread over many deltas, keyed by ``index``; they are assembled here
and yielded as complete calls when the choice finishes. Usage and the finish reason are held
back until the stream ends so they always come last, usage before finish.
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

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "refusal",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatStreamDecoder:
    """Stateful decoder of one streamed chat completion (choice 0 only)."""

    def __init__(self) -> None:
        self._calls: dict[int, _PendingCall] = {}
        self._flushed = False
        self._refused = False
        self._usage: UsageChunk | None = None
        self.finish_reason: str | None = None
        self.saw_choice = False

    @property
    def finished(self) -> bool:
        """Whether the upstream has said why the choice ended."""
        return self.finish_reason is not None

    def feed(self, payload: Any) -> list[Chunk]:
        """Decode one chunk object.

        :param payload: the JSON of one ``data:`` line.
        :returns: the chunks it completes, in order.
        :raises provider_kit.UpstreamError: when the object is (or carries) an error.
        """
        # Nearly every event of a stream is one choice whose delta is only text: taken here
        # without the general walk below (which gives the same result for it).
        if type(payload) is dict and "usage" not in payload and "error" not in payload:
            choices = payload.get("choices")
            if type(choices) is list and len(choices) == 1:
                choice = choices[0]
                if (
                    type(choice) is dict
                    and choice.get("index", 0) == 0
                    and choice.get("finish_reason") is None
                ):
                    delta = choice.get("delta")
                    if type(delta) is dict and len(delta) == 1:
                        content = delta.get("content")
                        if type(content) is str:
                            self.saw_choice = True
                            return [TextChunk(content)] if content else []
        return self._feed(payload)

    def _feed(self, payload: Any) -> list[Chunk]:
        if not isinstance(payload, dict):
            raise ValueError("stream chunk is not a JSON object")
        if payload.get("error"):
            raise provider_kit.UpstreamError(payload)
        out: list[Chunk] = []
        usage = _typed(payload, "usage", dict)
        if usage is not None:
            self._usage = usage_chunk(usage)
        choice = None
        for candidate in _typed(payload, "choices", list) or ():
            if not isinstance(candidate, dict):
                raise ValueError("a choice is not a JSON object")
            if candidate.get("index", 0) == 0:
                choice = candidate
                break
        if choice is None:
            return out
        self.saw_choice = True
        delta = _typed(choice, "delta", dict) or _typed(choice, "message", dict) or {}
        out.extend(self._delta(delta))
        reason = _typed(choice, "finish_reason", str)
        if reason:
            if reason == "error":
                raise provider_kit.UpstreamError(payload)
            self.finish_reason = reason
            out.extend(self._flush_calls())
        return out

    def feed_event(self, name: str, payload: Any) -> list[Chunk]:
        """Decode the data of one SSE event; an event named ``error`` is the upstream's error.

        :param name: the event's ``event:`` field (``message`` when it had none).
        :param payload: its decoded JSON data.
        :returns: the chunks it completes, in order.
        """
        if name == "error":
            raise provider_kit.UpstreamError(payload)
        return self.feed(payload)

    def _delta(self, delta: dict[str, Any]) -> list[Chunk]:
        out: list[Chunk] = []
        # Servers name the reasoning field differently; take whichever carries text.
        for key in ("reasoning_content", "reasoning"):
            thought = delta.get(key)
            if isinstance(thought, str) and thought:
                out.append(ReasoningChunk(thought))
                break
        content = delta.get("content")
        if isinstance(content, list):
            # Some servers (Mistral's reasoning models) stream content as typed parts.
            content = "".join(_text_parts(content))
        elif content is not None and not isinstance(content, str):
            raise ValueError(f"'content' is a {type(content).__name__}, not a string")
        if content:
            out.append(TextChunk(content))
        refusal = _typed(delta, "refusal", str)
        if refusal:
            self._refused = True
            out.append(TextChunk(refusal))
        for fragment in _typed(delta, "tool_calls", list) or ():
            if not isinstance(fragment, dict):
                raise ValueError("a tool call fragment is not a JSON object")
            self._fragment(fragment)
        return out

    def _fragment(self, fragment: dict[str, Any]) -> None:
        call_id = fragment.get("id")
        index = fragment.get("index")
        if not isinstance(index, int):
            # Some servers omit the index: a new id opens a new call, else continue the last.
            known = next((i for i, c in self._calls.items() if call_id and c.id == call_id), None)
            if known is not None:
                index = known
            elif call_id or not self._calls:
                index = max(self._calls, default=-1) + 1
            else:
                index = max(self._calls)
        call = self._calls.setdefault(index, _PendingCall())
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        function = _typed(fragment, "function", dict) or {}
        name = _typed(function, "name", str)
        if name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):
            call.arguments.append(json.dumps(arguments))
        elif arguments is not None:
            raise ValueError("tool call arguments are neither a string nor an object")

    def _flush_calls(self) -> list[Chunk]:
        if self._flushed:
            return []
        self._flushed = True
        out: list[Chunk] = []
        for number, index in enumerate(sorted(self._calls)):
            call = self._calls[index]
            arguments = "".join(call.arguments).strip() or "{}"
            call_id = call.id or f"call_{number}"
            out.append(ToolCallChunk(ToolCallRequest(id=call_id, name=call.name, arguments=arguments)))
        return out

    def finish(self) -> list[Chunk]:
        """Return what is left once the stream has ended: pending calls, usage, finish.

        :raises provider_kit.StreamBroken: when no chunk carried a choice: the upstream sent
            objects of some other shape, so there is no answer to report as complete.
        """
        if not self.saw_choice:
            raise provider_kit.StreamBroken("the stream carried no completion choice")
        out = self._flush_calls()
        if self._usage is not None:
            out.append(self._usage)
        out.append(FinishChunk(self._reason()))
        return out

    def _reason(self) -> FinishReason:
        if self._refused:
            return "refusal"
        mapped = _FINISH.get(self.finish_reason or "", "stop")
        # Some local servers report "stop" even though the model asked for tools.
        if self._calls and mapped == "stop":
            return "tool_calls"
        return mapped


def _text_parts(parts: list[Any]) -> list[str]:
    """Return the texts of ``{"type": "text", "text": …}`` content parts; other types are skipped.

    :raises ValueError: for a part that is not such an object.
    """
    texts = []
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise ValueError("a content part is not a typed JSON object")
        if part["type"] == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise ValueError("a text content part has no text")
            texts.append(text)
    return texts


def usage_chunk(usage: dict[str, Any]) -> UsageChunk:
    """Return the usage an upstream reported (``prompt_tokens``/``completion_tokens``)."""
    details = usage.get("completion_tokens_details") or {}
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return UsageChunk(
        input=_count(usage.get("prompt_tokens")),
        output=_count(usage.get("completion_tokens")),
        reasoning=_count(reasoning),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
