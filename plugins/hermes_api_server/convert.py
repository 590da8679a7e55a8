"""Turn OpenAI-shaped messages and Responses items into core content
(docs/reference/api-server.md#chat-request, #responses-request)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from hermes_api_server.errors import ApiError, invalid
from hermes_core import ImagePart, Part, SeedMessage, TextPart

MAX_PARTS = 1000
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
IMAGE_TYPES = frozenset({"image_url", "input_image"})


@dataclass(slots=True)
class Conversation:
    """A body split into its system text, history and the turn's user content."""

    system: str
    history: list[SeedMessage]
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart))


def _image(url: Any, param: str) -> ImagePart:
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str):
        raise ApiError(400, "invalid_image_url", "Image URL must be http(s) or data:image/…", param=param)
    if url.startswith("data:image/"):
        header, _, payload = url.partition(",")
        mime = header[5:].split(";", 1)[0]
        try:
            data = base64.b64decode(payload, validate=True) if ";base64" in header else payload.encode()
        except (binascii.Error, ValueError):
            raise ApiError(400, "invalid_image_url", "Malformed data: image URL", param=param) from None
        return ImagePart(data=data, mime=mime)
    if url.startswith(("http://", "https://")):
        return ImagePart(url=url)
    raise ApiError(400, "invalid_image_url", "Image URL must be http(s) or data:image/…", param=param)


def content_parts(content: Any, param: str) -> tuple[Part, ...]:
    """Convert a string or a list of parts into core parts.

    :raises ApiError: unknown or file parts, bad image URLs, too many parts.
    """
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextPart(content),)
    if not isinstance(content, list):
        raise invalid("content must be a string or a list of parts", param)
    if len(content) > MAX_PARTS:
        raise invalid(f"content has more than {MAX_PARTS} parts", param)
    parts: list[Part] = []
    for part in content:
        if isinstance(part, str):
            parts.append(TextPart(part))
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            kind = None  # a non-string type (say, an object) is unhashable for the set lookups
        if kind in TEXT_TYPES and isinstance(part.get("text"), str):
            parts.append(TextPart(part["text"]))
        elif kind in IMAGE_TYPES:
            parts.append(_image(part.get("image_url"), param))
        else:
            raise ApiError(
                400, "unsupported_content_type", f"Unsupported content part: {kind!r}", param=param
            )
    return tuple(parts)


def _text(parts: tuple[Part, ...]) -> str:
    return "\n\n".join(p.text for p in parts if isinstance(p, TextPart))


def _has_input(parts: tuple[Part, ...]) -> bool:
    return any(isinstance(p, ImagePart) or p.text.strip() for p in parts)


def chat_conversation(messages: Any) -> Conversation:
    """Split chat ``messages`` into system text, history and the final user message.

    :raises ApiError: the docs/reference/api-server.md#chat-request rules.
    """
    if messages is None:
        raise ApiError(400, "missing_required_parameter", "messages is required", param="messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("messages must be a non-empty array", "messages")
    if len(messages) > 100_000:
        raise invalid("messages has too many entries", "messages")
    system: list[str] = []
    history: list[SeedMessage] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise invalid("each message must be an object", f"messages[{i}]")
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise invalid(f"unknown role {role!r}", f"messages[{i}].role")
        if role in ("tool", "function"):
            continue
        parts = content_parts(message.get("content"), f"messages[{i}].content")
        if role in ("system", "developer"):
            system.append(_text(parts))
            continue
        history.append(SeedMessage(role=role, text=_text(parts), parts=parts))  # type: ignore[arg-type]
    last = messages[-1]
    if last.get("role") != "user" or not history or not _has_input(history[-1].parts):
        raise invalid("No user message found in messages", "messages")
    final = history.pop()
    return Conversation("\n".join(system), history, final.parts)


def response_items(value: Any, param: str = "input") -> Conversation:
    """Split Responses ``input`` into system text, history and the final user message.

    :raises ApiError: the docs/reference/api-server.md#responses-request rules.
    """
    if value is None or value == "" or value == []:
        raise ApiError(400, "missing_required_parameter", f"{param} is required", param=param)
    if isinstance(value, str):
        return Conversation("", [], (TextPart(value),))
    if not isinstance(value, list):
        raise invalid(f"{param} must be a string or an array of items", param)
    system: list[str] = []
    history: list[SeedMessage] = []
    last_is_user = False
    for i, item in enumerate(value):
        where = f"{param}[{i}]"
        if isinstance(item, str):
            history.append(SeedMessage(role="user", text=item, parts=(TextPart(item),)))
            last_is_user = True
            continue
        if not isinstance(item, dict):
            raise ApiError(400, "unsupported_content_type", "Unsupported input item", param=where)
        kind = item.get("type", "message")
        if kind in ("function_call", "function_call_output", "reasoning"):
            last_is_user = False
            continue
        if kind != "message":
            raise ApiError(
                400, "unsupported_content_type", f"Unsupported input item type {kind!r}", param=where
            )
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise invalid(f"unknown role {role!r}", f"{where}.role")
        parts = content_parts(item.get("content"), f"{where}.content")
        if role in ("system", "developer"):
            system.append(_text(parts))
            continue
        history.append(SeedMessage(role=role, text=_text(parts), parts=parts))
        last_is_user = role == "user"
    if not last_is_user or not history or not _has_input(history[-1].parts):
        raise invalid("No user message found in input", param)
    final = history.pop()
    return Conversation("\n".join(system), history, final.parts)


def seed_history(value: Any, param: str) -> list[SeedMessage]:
    """Parse ``conversation_history``: ``[{role, content}]`` for a new session."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid(f"{param} must be an array", param)
    out: list[SeedMessage] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant", "system"):
            raise invalid("each entry needs a role of user, assistant or system", f"{param}[{i}]")
        parts = content_parts(item.get("content"), f"{param}[{i}].content")
        out.append(SeedMessage(role=item["role"], text=_text(parts), parts=parts))
    return out
