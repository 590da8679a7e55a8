"""Build the JSON body of a streamed Messages API call from a ``ChatRequest``."""

from __future__ import annotations

import base64
import json
from typing import Any

from hermes_core import ChatMessage, ChatRequest, ImagePart, TextPart, ToolSchema

# Thinking budgets per reasoning effort; the API wants at least 1024 and less than max_tokens.
THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 4000,
    "medium": 10_000,
    "high": 20_000,
    "xhigh": 28_000,
}
# Room left for the answer itself on top of the thinking budget.
_ANSWER_ROOM = 4000

_PASSTHROUGH = frozenset({"temperature", "top_p", "top_k", "stop_sequences", "metadata"})
# Sampling knobs the API refuses while extended thinking is on.
_NOT_WITH_THINKING = frozenset({"temperature", "top_p", "top_k"})


def build_body(request: ChatRequest, default_max_tokens: int) -> dict[str, Any]:
    """Return the request body for one streamed Messages call.

    :param request: what the core wants to ask.
    :param default_max_tokens: the output limit when ``options`` has no ``max_tokens``.
    :returns: a JSON-ready dict.
    """
    max_tokens = request.options.get("max_tokens") or default_max_tokens
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": build_messages(request.messages),
        "stream": True,
    }
    system = system_prompt(request)
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [tool_entry(tool) for tool in request.tools]
    for key, value in request.options.items():
        if key in _PASSTHROUGH and value is not None:
            body[key] = value
    stop = request.options.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    budget = thinking_budget(request)
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = max(max_tokens, budget + _ANSWER_ROOM)
        for key in _NOT_WITH_THINKING:
            body.pop(key, None)
    return body


def thinking_budget(request: ChatRequest) -> int | None:
    """Return the thinking budget for this call, or ``None`` to leave thinking off.

    Thinking stays off for models that lack it, and when the call continues a tool loop:
    the API then wants the previous thinking blocks (with signatures) sent back, which the
    history does not keep.
    """
    budget = THINKING_BUDGETS.get(request.reasoning_effort or "")
    if budget is None:
        return None
    if request.model.startswith("claude-3-") and not request.model.startswith("claude-3-7"):
        return None
    if request.messages and request.messages[-1].role == "tool":
        return None
    return budget


def system_prompt(request: ChatRequest) -> str:
    """Return the system prompt plus any system messages of the history, in order."""
    texts = [request.system] if request.system else []
    texts.extend(m.content for m in request.messages if m.role == "system" and m.content)
    return "\n\n".join(texts)


def build_messages(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """Return the ``messages`` array; consecutive same-role messages share one entry.

    Tool results travel as ``tool_result`` blocks of a user message, so a batch of results
    (and any user text after them) becomes the single user turn the API expects.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = content_blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def content_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """Return the content blocks of one history message."""
    if message.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
        images = [
            source for part in message.parts if isinstance(part, ImagePart) and (source := image_source(part))
        ]
        if images:
            # A result with images is a list of blocks: the text, then each image.
            parts: list[dict[str, Any]] = (
                [{"type": "text", "text": message.content}] if message.content else []
            )
            result["content"] = parts + [{"type": "image", "source": source} for source in images]
        elif message.content:
            result["content"] = message.content
        return [result]
    if message.role == "assistant":
        blocks: list[dict[str, Any]] = []
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call.arguments)}
            )
        return blocks
    return user_blocks(message)


def user_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """Return the blocks of a user message: its text and its images."""
    if not any(isinstance(part, ImagePart) for part in message.parts):
        return [{"type": "text", "text": message.content}] if message.content else []
    blocks: list[dict[str, Any]] = []
    if message.content and not any(isinstance(part, TextPart) for part in message.parts):
        blocks.append({"type": "text", "text": message.content})
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            source = image_source(part)
            if source is not None:
                blocks.append({"type": "image", "source": source})
    return blocks


def image_source(part: ImagePart) -> dict[str, Any] | None:
    """Return an image block's ``source``: inline base64 bytes or a URL."""
    if part.data is not None:
        return {
            "type": "base64",
            "media_type": part.mime,
            "data": base64.b64encode(part.data).decode("ascii"),
        }
    if part.url:
        return {"type": "url", "url": part.url}
    return None


def tool_input(arguments: str) -> dict[str, Any]:
    """Return a tool call's arguments as the JSON object ``tool_use.input`` must be."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}  # the model produced broken JSON; the tool result already says so
    return value if isinstance(value, dict) else {}


def tool_entry(tool: ToolSchema) -> dict[str, Any]:
    """Return one entry of the ``tools`` array."""
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
