"""Small helpers shared by the ACP tests: directives and update filters."""

from __future__ import annotations

import json
from typing import Any


def tool(name: str, **args: Any) -> str:
    """Return a mock ``[[tool NAME {json}]]`` directive.

    :param name: the tool.
    :param args: its arguments.
    :returns: the directive text.
    """
    return f"[[tool {name} {json.dumps(args)}]]"


def of_kind(updates: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    """Keep the updates of these ``sessionUpdate`` kinds.

    :param updates: updates.
    :param kinds: the kinds.
    :returns: the matching updates.
    """
    return [u for u in updates if u.get("sessionUpdate") in kinds]


def calls(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Group tool-call updates by ``toolCallId``.

    :param updates: updates.
    :returns: id → its tool_call and tool_call_update objects in order.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for u in of_kind(updates, "tool_call", "tool_call_update"):
        out.setdefault(u["toolCallId"], []).append(u)
    return out


def final(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the one final update of a call.

    :param events: the call's updates.
    :returns: the update with a final status.
    """
    finals = [u for u in events if u.get("status") in ("completed", "failed")]
    assert len(finals) == 1, events
    return finals[0]


def content_text(update: dict[str, Any]) -> str:
    """Concatenate the text content blocks of a tool-call update.

    :param update: the update.
    :returns: the text.
    """
    return "".join(
        b["content"].get("text", "") for b in update.get("content") or [] if b.get("type") == "content"
    )
