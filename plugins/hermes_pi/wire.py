"""pi's response records and the checked reading of command fields (docs/reference/pi.md#responses).

Every command gets exactly one ``response``: ``success: true`` with optional ``data``, or
``success: false`` with an ``error`` message. A field of the wrong type is a :class:`BadCommand`,
answered the same way; nothing a client sends ends the process.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from hermes_core import IMAGE_MIME, ImagePart, Part, TextPart

#: What ``--version`` prints: the pi release whose RPC protocol ``hermes pi`` speaks.
PI_VERSION = "1.6.0"


class BadCommand(Exception):
    """A command that cannot be run as sent; its message is the response's ``error``."""


def success(request_id: Any, command: str, data: Any = None, *, with_data: bool = False) -> dict[str, Any]:
    """Build a success response (``data`` only when given, or when ``with_data``: ``null`` data)."""
    record: dict[str, Any] = {"type": "response", "command": command, "success": True}
    if request_id is not None:
        record = {"id": request_id, **record}
    if data is not None or with_data:
        record["data"] = data
    return record


def failure(request_id: Any, command: Any, message: str) -> dict[str, Any]:
    """Build a failure response; ``command`` is echoed as sent (pi echoes the command type)."""
    record: dict[str, Any] = {"type": "response", "command": command, "success": False, "error": message}
    if request_id is not None:
        record = {"id": request_id, **record}
    return record


def unsupported(command: str, why: str) -> BadCommand:
    """Return the error for a command, or a value of one, that Hermes has no counterpart for."""
    return BadCommand(f"{command} is not supported by hermes pi: {why}")


def echo_id(value: Any) -> Any:
    """Return the command's ``id`` as it may be echoed (strings and integers), else None."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


class Command:
    """One decoded command object with checked field access.

    :param raw: the decoded JSON object.
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.id = echo_id(raw.get("id"))
        kind = raw.get("type")
        self.type: str = kind if isinstance(kind, str) else ""

    def text(self, name: str, *, allow_empty: bool = False) -> str:
        """Return a required string field."""
        value = self.raw.get(name)
        if not isinstance(value, str):
            raise BadCommand(f"{self.type}: {name} must be a string")
        if not allow_empty and not value.strip():
            raise BadCommand(f"{self.type}: {name} must not be empty")
        return value

    def optional_text(self, name: str) -> str | None:
        """Return an optional string field (absent or null: None)."""
        value = self.raw.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise BadCommand(f"{self.type}: {name} must be a string")
        return value

    def flag(self, name: str, *, default: bool | None = None) -> bool:
        """Return a boolean field (required unless ``default`` is given)."""
        value = self.raw.get(name)
        if value is None and default is not None:
            return default
        if not isinstance(value, bool):
            raise BadCommand(f"{self.type}: {name} must be true or false")
        return value

    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        """Return a required string field that must be one of ``allowed``."""
        value = self.raw.get(name)
        if value not in allowed:
            raise BadCommand(f"{self.type}: {name} must be one of {', '.join(allowed)}")
        return str(value)

    def content(self, name: str = "message") -> list[Part]:
        """Return the prompt text plus its ``images`` as core content parts."""
        text = self.text(name, allow_empty=True)
        parts: list[Part] = [TextPart(text)]
        parts.extend(images(self.type, self.raw.get("images")))
        if not text.strip() and len(parts) == 1:
            raise BadCommand(f"{self.type}: {name} must not be empty")
        return parts


def images(command: str, value: Any) -> list[ImagePart]:
    """Decode pi ``ImageContent`` objects (``{type: "image", data: base64, mimeType}``)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadCommand(f"{command}: images must be a list of image objects")
    out: list[ImagePart] = []
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("data"), str):
            raise BadCommand(f"{command}: images[{index}] must be {{type: image, data, mimeType}}")
        mime = item.get("mimeType")
        if mime not in IMAGE_MIME.values():
            allowed = ", ".join(sorted(set(IMAGE_MIME.values())))
            raise BadCommand(f"{command}: images[{index}].mimeType must be one of {allowed}")
        try:
            data = base64.b64decode(item["data"], validate=True)
        except (binascii.Error, ValueError):
            raise BadCommand(f"{command}: images[{index}].data is not base64") from None
        out.append(ImagePart(data=data, mime=str(mime)))
    return out
