"""pi's session entries and entry tree, from every stored row (docs/reference/pi.md#entries-and-the-tree).

An entry's id is the row id, so it stays a durable cursor across restarts. Rows are read in the
order they were appended. Active rows, and rows a compression archived, form the current branch:
each one's parent is the branch row before it, so a compression summary, appended last, becomes a
``compaction`` entry whose ``firstKeptEntryId`` is the first row it kept. Rows a rewind archived are
an abandoned branch: they hang off the branch row they followed. The tree is encoded without
recursion, since a long session is a deep tree.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from hermes_core import Row
from hermes_pi.messages import row_message

Redact = Callable[[Any], Any]
MARKERS = frozenset({"model_switch", "hidden"})
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _iso(ts: float) -> str:
    stamp = _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _on_branch(row: Row) -> bool:
    return row.active or row.archived_reason == "compress"


def build(rows: Sequence[Row], redact: Redact) -> tuple[list[dict[str, Any]], str | None]:
    """Return every entry in append order and the id of the current leaf (None when empty)."""
    ordered = sorted((r for r in rows if r.display_kind not in MARKERS), key=lambda r: r.id)
    entries: list[dict[str, Any]] = []
    branch_tip: str | None = None
    previous: Row | None = None
    for row in ordered:
        entry_id = str(row.id)
        if _on_branch(row):
            parent = branch_tip
            branch_tip = entry_id
        elif previous is not None and not _on_branch(previous):
            parent = str(previous.id)
        else:
            parent = branch_tip
        base = {"id": entry_id, "parentId": parent, "timestamp": _iso(row.created_at)}
        if row.display_kind == "summary":
            entries.append({"type": "compaction", **base, **_compaction(row, ordered)})
        else:
            message = row_message(row, redact)
            if message is None:
                previous = row
                continue
            entries.append({"type": "message", **base, "message": message})
        previous = row
    return entries, branch_tip


def _compaction(summary: Row, rows: Sequence[Row]) -> dict[str, Any]:
    kept = [r for r in rows if r.active and r.id < summary.id and r.display_kind != "summary"]
    first = min(kept, key=lambda r: (r.position, r.id), default=None)
    return {
        "summary": summary.content,
        "firstKeptEntryId": str(first.id if first is not None else summary.id),
        "tokensBefore": int(summary.meta.get("tokens_before") or 0),
    }


def compaction_entry(summary: Row, rows: Sequence[Row]) -> dict[str, Any]:
    """Return the ``compaction`` entry of a summary row just written (its parent: the row before it)."""
    earlier = [r.id for r in rows if r.id < summary.id and r.display_kind not in MARKERS]
    return {
        "type": "compaction",
        "id": str(summary.id),
        "parentId": str(max(earlier)) if earlier else None,
        "timestamp": _iso(summary.created_at),
        **_compaction(summary, rows),
    }


def json_string(text: str) -> str:
    """Return ``text`` as a JSON string literal."""
    return _ENCODER.encode(text)


def since(entries: list[dict[str, Any]], cursor: str) -> list[dict[str, Any]] | None:
    """Return the entries after the one with id ``cursor``, or None when no entry has it."""
    for index, entry in enumerate(entries):
        if entry["id"] == cursor:
            return entries[index + 1 :]
    return None


def encode_tree(entries: list[dict[str, Any]]) -> str:
    """Return pi's ``SessionTreeNode[]`` as JSON text: ``{entry, children}`` nodes, roots first."""
    known = {e["id"] for e in entries}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for entry in entries:
        parent = entry["parentId"] if entry["parentId"] in known else None
        children.setdefault(parent, []).append(entry)
    out: list[str] = ["["]
    # Each stack item is an iterator over siblings still to write, and whether one was written.
    stack: list[tuple[list[dict[str, Any]], int]] = [(children.get(None, []), 0)]
    while stack:
        siblings, index = stack.pop()
        if index >= len(siblings):
            out.append("]")
            if stack:
                out.append("}")
            continue
        if index:
            out.append(",")
        node = siblings[index]
        stack.append((siblings, index + 1))
        out.append('{"entry":')
        out.append(_ENCODER.encode(node))
        out.append(',"children":[')
        stack.append((children.get(node["id"], []), 0))
    return "".join(out)
