"""How a client's transcript is compared with a session's stored rows
(docs/reference/core.md#rewind-and-reconcile).

Reconcile compares the two as lists of ``(role, text)``: whitespace runs collapsed, marker,
hidden, tool and tool-call-only rows left out, a summary standing for its originals. Hosts that
need to recognise a conversation by its transcript (the API server finding the session of a
stateless chat) use the same projection, so a transcript that reconciles cleanly with a
session's rows also compares equal to them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.content import SeedMessage
    from hermes_core.storage import Row

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Collapse whitespace runs to one space and strip the ends."""
    return _SPACE.sub(" ", text).strip()


def comparable_rows(rows: Sequence[Row]) -> list[tuple[str, str, list[Row]]]:
    """The stored side: ``(role, normalized text, the live rows it stands for)`` per entry."""
    out: list[tuple[str, str, list[Row]]] = []
    for row in rows:
        if row.display_kind in ("model_switch", "hidden"):
            continue
        if row.role == "assistant" and row.tool_calls and not row.content:
            continue
        if row.role == "tool":
            continue
        if row.display_kind == "summary":
            for original in row.meta.get("originals", []):
                out.append((original["role"], normalize(original["text"]), [row]))
            continue
        out.append((row.role, normalize(row.content), [row]))
    return out


def comparable_messages(messages: Sequence[SeedMessage]) -> list[tuple[str, str]]:
    """The client side: ``(role, normalized text)`` of the user and assistant messages."""
    return [(m.role, normalize(m.text)) for m in messages if m.role in ("user", "assistant")]
