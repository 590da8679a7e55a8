"""An MCP ``CallToolResult`` as the result the model gets.

Text blocks are kept as they are; structured content is added as JSON when the text does not
already carry it; images of the types providers take (PNG, JPEG, GIF, WebP) travel as the
result's images (a model that cannot see them reads one line each instead); audio, other image
types and binary resources each become a one-line note saying what was left out.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hermes_core import IMAGE_MIME, ImagePart, ToolResult

_SHOWN_MIME = frozenset(IMAGE_MIME.values())


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def describe_size(data: str) -> str:
    """``N bytes`` for base64 ``data``."""
    return f"{_size(data)} bytes"


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_size(block.data)} bytes: not shown to the model]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return text
        mime = getattr(res, "mime_type", None) or "application/octet-stream"
        return f"[resource {res.uri} ({mime}, {_size(getattr(res, 'blob', ''))} bytes)]"
    if kind == "resource_link":
        return f"[resource link {block.uri}{f' ({block.name})' if getattr(block, 'name', None) else ''}]"
    return f"[{kind or 'unknown'} content]"


def _same(text: str, structured: Any) -> bool:
    """Whether the text already says what the structured content says (also the SDK's
    ``{"result": value}`` wrapping of a plain return value)."""
    if not text:
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    if parsed == structured:
        return True
    return (
        isinstance(structured, dict)
        and set(structured) == {"result"}
        and structured["result"] in (parsed, text)
    )


def _image(block: Any) -> ImagePart | None:
    """The image of an ``image`` block the providers can take, else None (it becomes a note)."""
    if getattr(block, "type", None) != "image" or block.mime_type not in _SHOWN_MIME:
        return None
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ImagePart(data=data, mime=block.mime_type) if data else None


def to_tool_result(result: Any) -> ToolResult:
    """Turn a ``CallToolResult`` into a :class:`ToolResult` (``is_error`` carried over)."""
    images: list[ImagePart] = []
    parts: list[str] = []
    for block in result.content:
        image = _image(block)
        if image is not None:
            images.append(image)
        else:
            parts.append(_block(block))
    text = "\n".join(p for p in parts if p)
    structured = result.structured_content
    if structured is not None:
        dumped = json.dumps(structured, ensure_ascii=False, sort_keys=True)
        same = _same(text, structured)
        if not text:
            text = dumped
        elif not same and dumped not in text:
            text = f"{text}\n[structured content] {dumped}"
    if not text and images:
        text = f"{len(images)} image{'s' if len(images) > 1 else ''}"
    return ToolResult(text or "(no output)", is_error=bool(result.is_error), images=tuple(images))
