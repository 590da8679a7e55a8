"""Prompt content blocks to the text a core turn gets (docs/reference/acp.md#prompt-content)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from hermes_acp.errors import invalid

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession

CONTEXT_LIMIT = 512 * 1024


def _cut(text: str) -> str:
    if len(text) <= CONTEXT_LIMIT:
        return text
    return text[:CONTEXT_LIMIT] + f"\n[truncated: {len(text) - CONTEXT_LIMIT} more characters omitted]"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


async def _read_link(conn: AcpConnection, acp_session: AcpSession, uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    raw = unquote(parsed.path)
    if not os.path.isabs(raw):
        return None
    path = Path(raw).resolve()
    if not _inside(path, acp_session.core.cwd.resolve()):
        return None
    if conn.caps.read_text_file and conn.peer is not None:
        try:
            result = await conn.peer.request(
                "fs/read_text_file",
                {"sessionId": acp_session.id, "path": str(path)},
                timeout=conn.settings.fs_timeout_s,
            )
        except Exception:
            return None
        content = result.get("content") if isinstance(result, dict) else None
        return content if isinstance(content, str) else None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(CONTEXT_LIMIT + 1)
    except OSError:
        return None


async def prompt_text(conn: AcpConnection, acp_session: AcpSession, blocks: list[dict[str, Any]]) -> str:
    """Turn the prompt blocks into one text for the core.

    :param conn: the connection.
    :param acp_session: the session.
    :param blocks: the ``prompt`` array.
    :returns: the text (prompt text, then context blocks).
    :raises RpcError: an unsupported block, or an empty prompt.
    """
    texts: list[str] = []
    context: list[str] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise invalid("prompt", f"prompt[{index}].text must be a string")
            texts.append(text)
        elif kind == "resource_link":
            uri = block.get("uri")
            if not isinstance(uri, str):
                raise invalid("prompt", f"prompt[{index}].uri must be a string")
            if "\x00" in uri or "\x00" in unquote(uri):
                raise invalid(
                    "prompt", f"prompt[{index}].uri is not a valid file path: it contains a NUL character"
                )
            body = await _read_link(conn, acp_session, uri)
            if body is None:
                context.append(f"[Linked: {uri}]")
            else:
                context.append(f"[File: {uri}]\n{_cut(body)}")
        elif kind == "resource":
            resource = block.get("resource")
            if not isinstance(resource, dict):
                raise invalid("prompt", f"prompt[{index}].resource must be an object")
            uri = str(resource.get("uri", ""))
            if isinstance(resource.get("text"), str):
                context.append(f"[Resource: {uri}]\n{_cut(resource['text'])}")
            else:
                blob = resource.get("blob")
                size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
                mime = resource.get("mimeType") or "unknown type"
                context.append(f"[Binary resource omitted: {uri} ({mime}, about {size} bytes)]")
        elif kind in ("image", "audio"):
            raise invalid("prompt", f"{kind} prompts are not supported")
        else:
            raise invalid("prompt", f"{kind!r} content blocks are not supported in prompts")
    if not any(t.strip() for t in texts) and not context:
        raise invalid("prompt", "prompt is empty")
    return "\n\n".join([t for t in ["".join(texts) if len(texts) <= 1 else "\n".join(texts)] if t] + context)


def first_text(blocks: list[dict[str, Any]]) -> str:
    """Return the first text block's text, trimmed (for slash command detection).

    :param blocks: the ``prompt`` array.
    :returns: the text, or ``""``.
    """
    for block in blocks:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"]).strip()
        return ""
    return ""
