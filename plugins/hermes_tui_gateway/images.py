"""Read image dimensions from file headers only (PNG, JPEG, GIF, WebP) for ``image.attach``."""

from __future__ import annotations

import struct
from pathlib import Path


def sniff(path: Path) -> tuple[str, int | None, int | None] | None:
    """Return ``(mime, width, height)`` from the header, or None when not a supported image."""
    with path.open("rb") as fh:
        head = fh.read(64)
        if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
            w, h = struct.unpack(">II", head[16:24])
            return "image/png", w, h
        if head[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", head[6:10])
            return "image/gif", w, h
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            return "image/webp", *_webp(head)
        if head[:2] == b"\xff\xd8":
            fh.seek(2)
            return "image/jpeg", *_jpeg(fh)
    return None


def _webp(head: bytes) -> tuple[int | None, int | None]:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30:
        w, h = struct.unpack("<HH", head[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25:
        b = head[21:25]
        w = 1 + (((b[1] & 0x3F) << 8) | b[0])
        h = 1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
        return w, h
    if chunk == b"VP8X" and len(head) >= 30:
        w = 1 + int.from_bytes(head[24:27], "little")
        h = 1 + int.from_bytes(head[27:30], "little")
        return w, h
    return None, None


def _jpeg(fh: object) -> tuple[int | None, int | None]:
    read = fh.read  # type: ignore[attr-defined]
    while True:
        marker = read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            return None, None
        kind = marker[1]
        size_raw = read(2)
        if len(size_raw) < 2:
            return None, None
        size = struct.unpack(">H", size_raw)[0]
        if 0xC0 <= kind <= 0xCF and kind not in (0xC4, 0xC8, 0xCC):
            data = read(5)
            if len(data) < 5:
                return None, None
            h, w = struct.unpack(">HH", data[1:5])
            return w, h
        read(size - 2)
