"""The file tools: ``read_file``, ``write_file`` and ``edit_file`` (docs/reference/core.md#tools).

Every read and write goes through ``ctx.file_access``. Edits are planned by a side-effect free
function that both the preview and the handler use, so the change the user approves is the one
the handler makes (recomputed against the file as it is when the call runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_core import FileChange, ToolContext, ToolError, ToolResult
from hermes_tools.common import bool_arg, cap_text, display_path, int_arg, output_cap, str_arg

DEFAULT_READ_LIMIT = 2000


def _target(args: Mapping[str, Any], ctx: ToolContext) -> Path:
    return ctx.resolve(str_arg(args, "path"))


def _split_lines(text: str) -> list[str]:
    # Split on "\n" only, so line numbers agree with editors (str.splitlines also breaks on
    # form feeds and other separators); a trailing newline does not start a new line.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _read_existing(path: Path, ctx: ToolContext) -> str:
    text = ctx.file_access.read_text(path)
    # Another FileAccess (an editor's buffers) may hand back text with NUL characters.
    if "\0" in text:
        raise ToolError(f"binary file: {path}")
    return text


def read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Return the file's lines, numbered, from ``offset`` for ``limit`` lines.

    :param args: ``path``, optional ``offset`` (1-based first line) and ``limit`` (line count).
    :param ctx: the running tool's context.
    :returns: the numbered lines, with a note when more lines follow.
    """
    path = _target(args, ctx)
    offset = int_arg(args, "offset", 1, minimum=0) or 1
    limit = int_arg(args, "limit", DEFAULT_READ_LIMIT, minimum=1) or DEFAULT_READ_LIMIT
    if path.is_dir():
        raise ToolError(f"{path} is a directory; use list_dir to see its entries")
    text = _read_existing(path, ctx)
    lines = _split_lines(text)
    if not lines:
        return ToolResult(text=f"({display_path(path, ctx)} is empty)")
    if offset > len(lines):
        raise ToolError(f"offset {offset} is past the end of {path} ({len(lines)} lines)")
    shown = lines[offset - 1 : offset - 1 + limit]
    last = offset - 1 + len(shown)
    body = "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(shown, start=offset))
    if last < len(lines):
        body += f"\n[showing lines {offset}-{last} of {len(lines)}; pass offset={last + 1} to read more]"
    return ToolResult(text=cap_text(body, output_cap(ctx)))


def plan_write(args: Mapping[str, Any], ctx: ToolContext) -> FileChange:
    """Return the change ``write_file`` would make, touching nothing.

    :param args: ``path`` and ``content``.
    :param ctx: the running tool's context.
    :returns: the change; ``old_text`` is None when the file does not exist yet.
    """
    path = _target(args, ctx)
    content = str_arg(args, "content", empty_ok=True)
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file")
    old_text = _read_existing(path, ctx) if path.exists() else None
    return FileChange(path=str(path), old_text=old_text, new_text=content)


def write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Create or overwrite a file with the given content.

    :param args: ``path`` and ``content``.
    :param ctx: the running tool's context.
    :returns: a short confirmation carrying the ``FileChange``.
    """
    change = plan_write(args, ctx)
    path = Path(change.path)
    ctx.file_access.write_text(path, change.new_text)
    count = len(_split_lines(change.new_text))
    shown = display_path(path, ctx)
    if change.old_text is None:
        text = f"Created {shown} ({count} lines)"
    elif change.old_text == change.new_text:
        text = f"Wrote {shown} ({count} lines; content unchanged)"
    else:
        text = f"Wrote {shown} ({count} lines)"
    return ToolResult(text=text, file_change=change)


def _count_and_replace(text: str, old: str, new: str, replace_all: bool, path: Path) -> tuple[str, int]:
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {path}")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string is not unique in {path}: found {count} times; pass replace_all or add context"
        )
    return text.replace(old, new), count


def plan_edit(args: Mapping[str, Any], ctx: ToolContext) -> tuple[FileChange, int]:
    """Return the change ``edit_file`` would make and how many places it replaces.

    :param args: ``path``, ``old_string``, ``new_string`` and optional ``replace_all``.
    :param ctx: the running tool's context.
    :returns: ``(change, replacements)``.
    """
    path = _target(args, ctx)
    old = str_arg(args, "old_string", empty_ok=True)
    new = str_arg(args, "new_string", empty_ok=True)
    replace_all = bool_arg(args, "replace_all")
    if not old:
        raise ToolError("old_string must not be empty; use write_file to create or overwrite a file")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    text = _read_existing(path, ctx)
    if old not in text and "\r\n" in text and "\n" in old and "\r\n" not in old:
        # The model writes "\n"; a file with Windows line endings should still match.
        old, new = old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    new_text, count = _count_and_replace(text, old, new, replace_all, path)
    return FileChange(path=str(path), old_text=text, new_text=new_text), count


def preview_write(args: Mapping[str, Any], ctx: ToolContext) -> FileChange:
    """Return the proposed ``FileChange`` of a ``write_file`` call (side-effect free).

    :param args: the call's arguments.
    :param ctx: the running tool's context.
    :returns: the change.
    """
    return plan_write(args, ctx)


def preview_edit(args: Mapping[str, Any], ctx: ToolContext) -> FileChange:
    """Return the proposed ``FileChange`` of an ``edit_file`` call (side-effect free).

    :param args: the call's arguments.
    :param ctx: the running tool's context.
    :returns: the change.
    """
    return plan_edit(args, ctx)[0]


def edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Replace an exact string in a file.

    :param args: ``path``, ``old_string``, ``new_string`` and optional ``replace_all``.
    :param ctx: the running tool's context.
    :returns: a short confirmation carrying the ``FileChange``.
    """
    change, count = plan_edit(args, ctx)
    path = Path(change.path)
    ctx.file_access.write_text(path, change.new_text)
    places = "1 occurrence" if count == 1 else f"{count} occurrences"
    return ToolResult(text=f"Edited {display_path(path, ctx)}: replaced {places}", file_change=change)
