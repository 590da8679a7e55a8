"""Inline ``MEDIA:<path>`` image tags of a chat answer as ``data:`` URLs
(docs/reference/api-server.md#chat-response)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from hermes_core import image_mime

MEDIA_RE = re.compile(r"MEDIA:(\S+)")
MAX_BYTES = 5 * 1024 * 1024


def inline_media(text: str, workspace: Path) -> str:
    """Replace tags naming images of at most 5 MB inside ``workspace``; leave others as they are.

    :param text: the assistant's answer.
    :param workspace: the session's workspace; paths outside it are never read.
    :returns: the text with inlined images.
    """
    if "MEDIA:" not in text:
        return text
    root = workspace.resolve()

    def replace(match: re.Match[str]) -> str:
        raw = match.group(1).rstrip(".,;:)]}\"'")
        tail = match.group(1)[len(raw) :]
        path = Path(raw)
        target = (path if path.is_absolute() else root / path).resolve()
        mime = image_mime(target)
        if mime is None or root not in target.parents or not target.is_file():
            return match.group(0)
        if target.stat().st_size > MAX_BYTES:
            return match.group(0)
        data = base64.b64encode(target.read_bytes()).decode("ascii")
        return f"data:{mime};base64,{data}{tail}"

    return MEDIA_RE.sub(replace, text)
