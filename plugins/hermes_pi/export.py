"""pi's ``export_html``: the session as one self-contained HTML page (docs/reference/pi.md#export_html).

Every text is escaped; the page has no scripts and loads nothing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
.m{border-left:4px solid #ccc;margin:1rem 0;padding:.25rem 1rem}
.user{border-color:#3a7bd5}.assistant{border-color:#2e9e5b}.toolResult{border-color:#a66}
.compactionSummary{border-color:#c90}.bashExecution{border-color:#777}
.role{font-size:.8rem;text-transform:uppercase;color:#666}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f6f6f6;padding:.5rem}
"""


def render(title: str, session_id: str, model: str | None, messages: Sequence[dict[str, Any]]) -> str:
    """Return the page for a session's pi messages."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Session <code>{html.escape(session_id)}</code>",
        f" · model <code>{html.escape(model)}</code>" if model else "",
        "</p>",
    ]
    for message in messages:
        role = str(message.get("role", ""))
        parts.append(f"<div class='m {html.escape(role)}'><div class='role'>{html.escape(role)}</div>")
        parts.extend(_body(message))
        parts.append("</div>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _body(message: dict[str, Any]) -> list[str]:
    role = message.get("role")
    if role == "compactionSummary":
        return [_pre(str(message.get("summary", "")))]
    if role == "bashExecution":
        return [
            f"<p><code>$ {html.escape(str(message.get('command', '')))}</code></p>",
            _pre(str(message.get("output", ""))),
        ]
    content = message.get("content")
    if isinstance(content, str):
        return [_pre(content)]
    out: list[str] = []
    if role == "toolResult":
        out.append(f"<p><code>{html.escape(str(message.get('toolName', '')))}</code></p>")
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            out.append(_pre(block.get("text", "")))
        elif kind == "thinking":
            out.append(f"<details><summary>thinking</summary>{_pre(block.get('thinking', ''))}</details>")
        elif kind == "toolCall":
            args = json.dumps(block.get("arguments"), ensure_ascii=False, indent=2)
            out.append(f"<p>→ <code>{html.escape(str(block.get('name', '')))}</code></p>{_pre(args)}")
        elif kind == "image":
            out.append(f"<p>[image {html.escape(str(block.get('mimeType', '')))}]</p>")
    return out


def _pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"
