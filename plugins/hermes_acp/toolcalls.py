"""Tool calls on the wire (docs/reference/acp.md#tool-calls): kind, title, locations, content, and their
lifecycle."""

from __future__ import annotations

import base64
import difflib
import logging
import os
import re
from typing import Any

from hermes_core import FileChange, ImagePart

log = logging.getLogger("hermes_acp")

KINDS = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"})
FIXED_KINDS = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "list_dir": "search",
    "search": "search",
    "terminal": "execute",
    "todo": "think",
}
NO_LOCATIONS = frozenset({"terminal", "todo"})
DIFF_SIDE_LIMIT = 1 << 20
TEXT_LIMIT = 8 * 1024
PROGRESS_LIMIT = 64 * 1024
FINAL = frozenset({"completed", "failed"})
EXIT_NOTE = re.compile(r"\[exit code (-?\d+)\]")


def tool_kind(name: str, declared: str | None) -> str:
    """Return the ACP kind of a tool: the fixed table, else its declared kind, else ``other``.

    :param name: the tool name.
    :param declared: the kind its ``ToolSpec`` declares.
    :returns: a valid ACP ``ToolKind``.
    """
    if name in FIXED_KINDS:
        return FIXED_KINDS[name]
    if declared in KINDS:
        return str(declared)
    if declared:
        log.warning("tool %s declares an invalid kind %r; sending 'other'", name, declared)
    return "other"


def tool_title(name: str, title: str | None, args: dict[str, Any]) -> str:
    """Return a non-empty title.

    :param name: the tool name.
    :param title: the core's title, if any.
    :param args: the (redacted) arguments.
    :returns: the title.
    """
    if name == "terminal":
        command = str(args.get("command", "")).splitlines()
        first = command[0] if command else ""
        return f"Run: {first[:80]}"
    if name == "todo":
        return "Update plan"
    text = (title or "").strip()
    return text or name


def first_changed_line(change: FileChange) -> int | None:
    """Return the 1-based first line that differs between old and new text.

    :param change: the file change.
    :returns: the line, or ``None`` when nothing differs.
    """
    old = (change.old_text or "").splitlines()
    new = change.new_text.splitlines()
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return index + 1
    if len(old) != len(new):
        return min(len(old), len(new)) + 1
    return None


def locations(name: str, paths: tuple[str, ...], change: FileChange | None) -> list[dict[str, Any]]:
    """Return absolute, normalised locations.

    :param name: the tool name.
    :param paths: the absolute paths the core resolved.
    :param change: the proposed change, for an edit's first line.
    :returns: ``ToolCallLocation`` objects.
    """
    if name in NO_LOCATIONS:
        return []
    out: list[dict[str, Any]] = []
    for path in paths[:20]:
        if not os.path.isabs(path):
            continue
        entry: dict[str, Any] = {"path": os.path.normpath(path)}
        if change is not None and os.path.normpath(change.path) == entry["path"]:
            line = first_changed_line(change)
            if line is not None:
                entry["line"] = line
        out.append(entry)
    return out


def image_block(image: ImagePart) -> dict[str, Any]:
    """Wrap an image a tool returned as tool-call content (base64 data and its MIME type)."""
    data = base64.b64encode(image.data or b"").decode("ascii")
    return {"type": "content", "content": {"type": "image", "mimeType": image.mime, "data": data}}


def text_block(text: str) -> dict[str, Any]:
    """Wrap text as tool-call content.

    :param text: the text.
    :returns: ``{"type": "content", "content": {"type": "text", "text": ...}}``.
    """
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff_content(change: FileChange) -> dict[str, Any]:
    """Return whole-file diff content, or a unified diff as text above 1 MiB per side.

    :param change: the change.
    :returns: a ``ToolCallContent`` object.
    """
    path = os.path.normpath(change.path)
    old = change.old_text
    if len(old or "") > DIFF_SIDE_LIMIT or len(change.new_text) > DIFF_SIDE_LIMIT:
        diff = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            change.new_text.splitlines(keepends=True),
            fromfile=path,
            tofile=path,
        )
        return text_block(cut("".join(diff), TEXT_LIMIT * 8))
    block: dict[str, Any] = {"type": "diff", "path": path, "newText": change.new_text}
    block["oldText"] = old
    return block


def cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """Cut text to ``limit`` characters, marking the cut.

    :param text: the text.
    :param limit: the most characters kept.
    :returns: the text, possibly cut.
    """
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [cut: {len(text) - limit} more characters]"


def announce(
    call_id: str,
    name: str,
    declared_kind: str | None,
    title: str | None,
    args: dict[str, Any],
    paths: tuple[str, ...],
    change: FileChange | None,
) -> dict[str, Any]:
    """Build the ``tool_call`` update for an announced call.

    :param call_id: the core call id.
    :param name: the tool name.
    :param declared_kind: the core's kind.
    :param title: the core's title.
    :param args: redacted arguments.
    :param paths: absolute paths.
    :param change: the proposed change for edits.
    :returns: the update object.
    """
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": tool_title(name, title, args),
        "kind": tool_kind(name, declared_kind),
        "status": "pending",
        "locations": locations(name, paths, change),
        "rawInput": dict(args),
    }
    if change is not None:
        update["content"] = [diff_content(change)]
    return update


def final_content(
    name: str, args: dict[str, Any], result: str, change: FileChange | None
) -> list[dict[str, Any]]:
    """Return the content of a final update.

    :param name: the tool name.
    :param args: the arguments.
    :param result: the result text (or error).
    :param change: the applied change, if any.
    :returns: content blocks.
    """
    if change is not None:
        return [diff_content(change)]
    if name == "terminal":
        command = str(args.get("command", ""))
        body = EXIT_NOTE.sub(r"[exit \1]", cut(result, TEXT_LIMIT * 8))
        return [text_block(f"$ {command}\n{body}")]
    return [text_block(cut(result))] if result else []


def terminal_exited(result: str) -> bool:
    """Tell whether a ``terminal`` result ended with a plain exit code (not a failure,
    docs/reference/acp.md#every-call-ends).

    :param result: the result text.
    :returns: ``True`` when its last line is the exit-code note.
    """
    lines = result.rstrip().splitlines()
    return bool(lines) and EXIT_NOTE.fullmatch(lines[-1].strip()) is not None


MATCH_LINE = re.compile(r"^(.+?):(\d+): ")


def search_locations(result: str, cwd: str) -> list[dict[str, Any]]:
    """Return the files a ``search`` result matched (at most 20, absolute, first line each).

    :param result: the result text (``path:line: text`` lines).
    :param cwd: the session workspace, for workspace-relative paths.
    :returns: ``ToolCallLocation`` objects.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in result.splitlines():
        match = MATCH_LINE.match(line)
        if match is None:
            continue
        path = os.path.normpath(os.path.join(cwd, match.group(1)))
        if path not in seen:
            seen.add(path)
            out.append({"path": path, "line": int(match.group(2))})
            if len(out) >= 20:
                break
    return out
