"""Build the JSON body of a streamed ``/chat/completions`` call from a ``ChatRequest``."""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from typing import Any, Literal

from hermes_core import ChatMessage, ChatRequest, ImagePart, TextPart, ToolSchema

# Dialects differ only in how reasoning effort and the output limit are spelled.
Dialect = Literal["openai", "openrouter", "generic"]

# Options a caller may pass through ``ChatRequest.options`` unchanged.
_PASSTHROUGH = frozenset(
    {
        "temperature",
        "top_p",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "user",
        "response_format",
        "tool_choice",
        "parallel_tool_calls",
        "max_completion_tokens",
    }
)

_REASONING_MODEL_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def encode_body(request: ChatRequest, dialect: Dialect) -> bytes:
    """Return the request body as JSON bytes, the ``tools`` array encoded once per tool set.

    The tool schemas are the bulk of a small request and the same on every turn, so their
    encoding is kept (see :class:`_ToolsCache`) instead of redone for each call.

    :param request: what the core wants to ask.
    :param dialect: ``openai`` (the official API), ``openrouter`` or ``generic``.
    """
    body = build_body(request, dialect, with_tools=False)
    head = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    if not request.tools:
        return head.encode("utf-8")
    tools = _TOOLS.encoded(request.tools)
    return f'{head[:-1]},"tools":{tools}}}'.encode()


class _ToolsCache:
    """Encoded ``tools`` arrays of the last few tool sets.

    A set is keyed by each tool's name, description and the identity of its parameters
    mapping (registry specs hand out the same mapping every turn); the entry keeps those
    mappings alive, so an identity is never reused while its key is cached.
    """

    SIZE = 16

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = OrderedDict()

    def encoded(self, tools: tuple[ToolSchema, ...]) -> str:
        key = tuple((t.name, t.description, id(t.parameters)) for t in tools)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry[0]
        text = json.dumps([tool_entry(t) for t in tools], ensure_ascii=False, separators=(",", ":"))
        self._entries[key] = (text, tuple(t.parameters for t in tools))
        if len(self._entries) > self.SIZE:
            self._entries.popitem(last=False)
        return text


_TOOLS = _ToolsCache()


def build_body(request: ChatRequest, dialect: Dialect, *, with_tools: bool = True) -> dict[str, Any]:
    """Return the request body for one streamed chat completion.

    :param request: what the core wants to ask.
    :param dialect: ``openai`` (the official API), ``openrouter`` or ``generic``.
    :param with_tools: include the ``tools`` array (:func:`encode_body` adds it pre-encoded).
    :returns: a JSON-ready dict.
    """
    body: dict[str, Any] = {
        "model": request.model,
        "messages": build_messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools and with_tools:
        body["tools"] = [tool_entry(tool) for tool in request.tools]
    for key, value in request.options.items():
        if key in _PASSTHROUGH and value is not None:
            body[key] = value
    max_tokens = request.options.get("max_tokens")
    if max_tokens is not None:
        # OpenAI's reasoning models refuse the old name; other servers only know the old one.
        body["max_completion_tokens" if dialect == "openai" else "max_tokens"] = max_tokens
    _add_reasoning(body, request, dialect)
    return body


def _add_reasoning(body: dict[str, Any], request: ChatRequest, dialect: Dialect) -> None:
    effort = request.reasoning_effort
    if effort is None or effort == "none":
        return
    if effort == "xhigh":
        effort = "high"
    if dialect == "openrouter":
        body["reasoning"] = {"effort": effort}
    elif dialect == "openai":
        # Non-reasoning OpenAI models reject the parameter outright.
        if request.model.startswith(_REASONING_MODEL_PREFIXES):
            body["reasoning_effort"] = effort
    else:
        body["reasoning_effort"] = effort


def build_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Return the ``messages`` array: the system prompt first, then the history in order."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    shown: list[ChatMessage] = []  # tool results with images, shown after their batch
    for message in request.messages:
        if shown and message.role != "tool":
            messages.append(tool_images_entry(shown))
            shown = []
        messages.append(message_entry(message))
        if message.role == "tool" and any(isinstance(part, ImagePart) for part in message.parts):
            shown.append(message)
    if shown:
        messages.append(tool_images_entry(shown))
    return messages


def tool_images_entry(results: list[ChatMessage]) -> dict[str, Any]:
    """Return the user message carrying the images of a batch of tool results.

    A ``tool`` message holds text only, so the images follow the batch (after every result, as
    the API wants the results right after the call) in one user message, each image under a
    line naming the call it came from.
    """
    content: list[dict[str, Any]] = []
    for result in results:
        content.append({"type": "text", "text": f"Images returned by tool call {result.tool_call_id or ''}:"})
        for part in result.parts:
            url = image_url(part) if isinstance(part, ImagePart) else None
            if url:
                content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


def message_entry(message: ChatMessage) -> dict[str, Any]:
    """Return one wire message for a history message."""
    if message.role == "assistant":
        entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments or "{}"},
                }
                for call in message.tool_calls
            ]
        elif entry["content"] is None:
            entry["content"] = ""
        return entry
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.role == "user" and any(isinstance(part, ImagePart) for part in message.parts):
        return {"role": "user", "content": user_parts(message)}
    return {"role": message.role, "content": message.content}


def user_parts(message: ChatMessage) -> list[dict[str, Any]]:
    """Return the content parts of a user message that carries images."""
    parts: list[dict[str, Any]] = []
    has_text_part = any(isinstance(part, TextPart) for part in message.parts)
    if not has_text_part and message.content:
        parts.append({"type": "text", "text": message.content})
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = image_url(part)
            if url:
                parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def image_url(part: ImagePart) -> str | None:
    """Return an image as a URL: its own, or its bytes as a ``data:`` URL."""
    if part.data is not None:
        encoded = base64.b64encode(part.data).decode("ascii")
        return f"data:{part.mime};base64,{encoded}"
    return part.url


def tool_entry(tool: ToolSchema) -> dict[str, Any]:
    """Return one entry of the ``tools`` array."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        },
    }
