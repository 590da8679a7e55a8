"""The image types Hermes reads from files, by file-name suffix (the one table all transports use)."""

from __future__ import annotations

from pathlib import PurePath

IMAGE_MIME: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def image_mime(path: str | PurePath) -> str | None:
    """Return the image MIME type ``path``'s suffix stands for (any case), or None."""
    return IMAGE_MIME.get(PurePath(path).suffix.lower())
