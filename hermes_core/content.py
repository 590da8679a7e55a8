"""User content parts and seed messages: what a host hands the core to say."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text in a user message."""

    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image in a user message, either inline bytes or a URL."""

    data: bytes | None = None
    url: str | None = None
    mime: str = "image/png"


Part = TextPart | ImagePart


@dataclass(frozen=True, slots=True)
class SeedMessage:
    """A message given to the core from outside: a seed, an API body, a one-shot request."""

    role: Role
    text: str
    parts: tuple[Part, ...] = field(default=())


def parts_text(content: str | Sequence[Part]) -> str:
    """Return the text of content, joining text parts with blank lines.

    :param content: a string or a sequence of parts.
    :returns: the text, images left out.
    """
    if isinstance(content, str):
        return content
    return "\n\n".join(p.text for p in content if isinstance(p, TextPart))


def normalize_content(content: str | Sequence[Part]) -> tuple[Part, ...]:
    """Return content as a tuple of parts."""
    if isinstance(content, str):
        return (TextPart(content),)
    return tuple(content)


def image_note(part: ImagePart) -> str:
    """One line telling a model that cannot see images which image a tool result left out."""
    size = f"{len(part.data)} bytes" if part.data is not None else (part.url or "no data")
    return f"[image {part.mime}, {size}: not shown to the model]"


def with_image_notes(text: str, parts: Sequence[Part]) -> str:
    """``text`` followed by one :func:`image_note` line per image of ``parts``."""
    notes = [image_note(p) for p in parts if isinstance(p, ImagePart)]
    if not notes:
        return text
    return "\n".join([text, *notes]) if text else "\n".join(notes)
