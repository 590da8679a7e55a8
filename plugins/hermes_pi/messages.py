"""pi's ``AgentMessage`` objects, built from stored rows and from a live turn
(docs/reference/pi.md#messages).

User rows become ``user`` messages, assistant rows ``assistant`` messages (thinking, text and
``toolCall`` blocks), tool rows ``toolResult`` messages and a compression summary a
``compactionSummary``. Timestamps are Unix milliseconds, as in pi.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hermes_core import ImagePart, ModelRef, Row, TextPart, cut_off_reason

Redact = Callable[[Any], Any]
_APIS = {"openai": "openai-completions", "anthropic": "anthropic-messages", "mock": "hermes-mock"}


def ms(ts: float) -> int:
    """Return epoch seconds as Unix milliseconds."""
    return int(ts * 1000)


def usage_object(input_tokens: int = 0, output_tokens: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """Return a pi ``Usage`` object (no cache counts or costs are known here)."""
    usage: dict[str, Any] = {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": input_tokens + output_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    if reasoning:
        usage["reasoning"] = reasoning
    return usage


def image_block(part: ImagePart) -> dict[str, Any] | None:
    """Return a pi ``ImageContent`` block for inline image bytes (None for a URL image)."""
    if part.data is None:
        return None
    return {"type": "image", "data": base64.b64encode(part.data).decode("ascii"), "mimeType": part.mime}


def content_blocks(text: str, parts: Iterable[Any]) -> list[dict[str, Any]]:
    """Return text plus the images among ``parts`` as pi content blocks."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for part in parts:
        if isinstance(part, ImagePart) and (block := image_block(part)) is not None:
            blocks.append(block)
    return blocks


def user_message(text: str, parts: Iterable[Any], ts: float) -> dict[str, Any]:
    """Return a pi ``user`` message."""
    images = [p for p in parts if not isinstance(p, TextPart)]
    return {"role": "user", "content": content_blocks(text, images), "timestamp": ms(ts)}


def api_of(provider: str) -> str:
    """Return pi's ``api`` name for a Hermes provider (``hermes`` for those pi has no name for)."""
    return _APIS.get(provider, "hermes")


def model_fields(ref: str | None) -> dict[str, str]:
    """Return the ``api``, ``provider`` and ``model`` fields of an assistant message."""
    split = ModelRef.split(ref)
    provider = split.provider or ""
    return {"api": api_of(provider), "provider": provider, "model": split.model}


def tool_call_block(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """Return a pi ``toolCall`` block."""
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def parse_arguments(raw: str, redact: Redact) -> dict[str, Any]:
    """Return stored tool-call arguments as an object, secrets masked (bad JSON kept as text)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {"arguments": redact(raw)}
    result = redact(value) if isinstance(value, dict) else {"arguments": redact(raw)}
    return result if isinstance(result, dict) else {"arguments": result}


def assistant_message(
    *,
    ref: str | None,
    text: str,
    reasoning: str,
    calls: Sequence[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, Any],
    ts: float,
    error: str | None = None,
) -> dict[str, Any]:
    """Return a pi ``assistant`` message (blocks in pi's order: thinking, text, tool calls)."""
    content: list[dict[str, Any]] = []
    if reasoning:
        content.append({"type": "thinking", "thinking": reasoning})
    if text:
        content.append({"type": "text", "text": text})
    content.extend(calls)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        **model_fields(ref),
        "usage": usage,
        "stopReason": stop_reason,
        "timestamp": ms(ts),
    }
    if error:
        message["errorMessage"] = error
    return message


def tool_result_message(
    call_id: str, name: str, text: str, is_error: bool, parts: Iterable[Any], ts: float
) -> dict[str, Any]:
    """Return a pi ``toolResult`` message."""
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content_blocks(text, parts),
        "isError": is_error,
        "timestamp": ms(ts),
    }


def row_message(row: Row, redact: Redact) -> dict[str, Any] | None:
    """Return the pi message of one stored row, or None for a row pi has no message for."""
    if row.role == "user":
        return user_message(row.content, row.parts, row.created_at)
    if row.role == "assistant":
        calls = [
            tool_call_block(c.call_id, c.name, parse_arguments(c.arguments, redact)) for c in row.tool_calls
        ]
        cut = cut_off_reason(row)
        stop = "toolUse" if calls else {"error": "error", "interrupted": "aborted"}.get(cut or "", "stop")
        return assistant_message(
            ref=row.model,
            text=row.content,
            reasoning=row.reasoning or "",
            calls=calls,
            stop_reason=stop,
            usage=usage_object(row.input_tokens or 0, row.output_tokens or 0),
            ts=row.created_at,
        )
    if row.role == "tool":
        return tool_result_message(
            row.call_id or "",
            row.tool_name or "",
            row.content,
            bool(row.meta.get("is_error")),
            row.parts,
            row.created_at,
        )
    if row.display_kind == "summary":
        return {
            "role": "compactionSummary",
            "summary": row.content,
            "tokensBefore": int(row.meta.get("tokens_before") or 0),
            "timestamp": ms(row.created_at),
        }
    return None


def row_messages(rows: Iterable[Row], redact: Redact) -> list[dict[str, Any]]:
    """Return the pi messages of ``rows``, in order, leaving out rows pi has no message for."""
    return [m for row in rows if (m := row_message(row, redact)) is not None]


def message_text(message: dict[str, Any]) -> str:
    """Return the text blocks of a message joined (a string content as is)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"
    )
