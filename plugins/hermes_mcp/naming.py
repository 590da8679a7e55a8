"""Tool names the providers accept: ``mcp_<server>_<tool>``, ``[A-Za-z0-9_]``, at most 64 characters."""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9]")


def tool_name(server: str, tool: str) -> str:
    """Return the registered name of ``tool`` of ``server``.

    Every character other than a letter or digit becomes ``_``; a name longer than 64 characters
    is cut and ends with 8 hex digits of a hash of the full name, so two long names stay apart.
    """
    name = f"mcp_{_UNSAFE.sub('_', server)}_{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"
