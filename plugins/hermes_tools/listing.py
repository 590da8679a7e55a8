"""The tools that look across files: ``list_dir`` and ``search`` (docs/reference/core.md#tools, #fixed-asks).

Both skip sensitive entries (``.git``, ``.ssh``, ``.env*``, private keys) unless the target the
user approved is itself sensitive, and neither follows symbolic links while walking, so a link
cannot lead them outside the approved target.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from hermes_core import ToolContext, ToolError, ToolResult
from hermes_tools.common import cap_text, display_path, is_sensitive, is_sensitive_name, output_cap, str_arg
from hermes_tools.fileaccess import decode_text

MAX_ENTRIES = 2000
MAX_MATCHES = 200
MAX_FILES = 20_000
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_LINE_CHARS = 300


def _name_order(name: str) -> tuple[str, str]:
    # Case-insensitive first, so README.md sorts among the r's as in most file browsers.
    return name.lower(), name


def list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """List a directory's entries, directories marked with a trailing ``/``.

    :param args: optional ``path`` (default ``.``).
    :param ctx: the running tool's context.
    :returns: one entry per line, sorted, with a note about skipped entries.
    """
    path = ctx.resolve(str_arg(args, "path", required=False) or ".")
    if not path.exists():
        raise ToolError(f"directory not found: {path}")
    if not path.is_dir():
        raise ToolError(f"not a directory: {path}; use read_file to read a file")
    show_sensitive = is_sensitive(path)
    entries: list[str] = []
    skipped = 0
    try:
        with os.scandir(path) as scan:
            for entry in scan:
                if not show_sensitive and is_sensitive_name(entry.name):
                    skipped += 1
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                entries.append(entry.name + "/" if is_dir else entry.name)
    except PermissionError:
        raise ToolError(f"permission denied: {path}") from None
    entries.sort(key=_name_order)
    notes: list[str] = []
    if len(entries) > MAX_ENTRIES:
        notes.append(f"[showing {MAX_ENTRIES} of {len(entries)} entries]")
        entries = entries[:MAX_ENTRIES]
    if skipped:
        noun = "entry" if skipped == 1 else "entries"
        notes.append(f"[{skipped} sensitive {noun} not shown; list it by name to see it]")
    if not entries:
        entries = ["(empty directory)" if not skipped else "(no entries shown)"]
    return ToolResult(text=cap_text("\n".join(entries + notes), output_cap(ctx)))


def _glob_matcher(glob: str) -> Callable[[PurePosixPath], bool]:
    if not glob:
        return lambda rel: True
    if "/" not in glob:
        return lambda rel: fnmatch.fnmatchcase(rel.name, glob)
    # "**/" may also stand for no directory at all, as in most shells' globstar; fnmatch's "*"
    # already crosses "/", so "**" needs no other treatment.
    patterns = {glob, glob.replace("**/", "")}
    return lambda rel: any(fnmatch.fnmatchcase(rel.as_posix(), pattern) for pattern in patterns)


def _walk(root: Path, show_sensitive: bool) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = sorted(
            (
                name
                for name in dirnames
                if (show_sensitive or not is_sensitive_name(name)) and not (base / name).is_symlink()
            ),
            key=_name_order,
        )
        for name in sorted(filenames, key=_name_order):
            if not show_sensitive and is_sensitive_name(name):
                continue
            candidate = base / name
            if not candidate.is_symlink():
                yield candidate


def _read_searchable(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return decode_text(data, path)
    except ToolError:
        return None  # binary


def search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Search text files under a path for lines matching a regular expression.

    :param args: ``pattern``, optional ``path`` (file or directory, default ``.``) and ``glob``.
    :param ctx: the running tool's context.
    :returns: ``path:line: text`` per match, bounded, with a summary line.
    """
    pattern = str_arg(args, "pattern")
    glob = str_arg(args, "glob", required=False)
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regex {pattern!r}: {exc}") from None
    root = ctx.resolve(str_arg(args, "path", required=False) or ".")
    if not root.exists():
        raise ToolError(f"path not found: {root}")
    show_sensitive = is_sensitive(root)
    matches_glob = _glob_matcher(glob)
    files: Iterator[Path] = iter([root]) if root.is_file() else _walk(root, show_sensitive)

    lines: list[str] = []
    files_matched = scanned = 0
    stopped = ""
    for file in files:
        if ctx.cancelled.is_set():
            raise ToolError("interrupted")
        rel = PurePosixPath(file.relative_to(root).as_posix()) if file != root else PurePosixPath(file.name)
        if not matches_glob(rel):
            continue
        scanned += 1
        if scanned > MAX_FILES:
            stopped = f"[stopped after {MAX_FILES} files; narrow the path or glob]"
            break
        text = _read_searchable(file)
        if text is None:
            continue
        shown = display_path(file, ctx)
        hit = False
        for number, line in enumerate(text.split("\n"), start=1):
            if regex.search(line):
                hit = True
                line = line.removesuffix("\r")
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + "…"
                lines.append(f"{shown}:{number}: {line}")
                if len(lines) >= MAX_MATCHES:
                    break
        files_matched += hit
        if len(lines) >= MAX_MATCHES:
            stopped = f"[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]"
            break
    where = display_path(root, ctx) + (f" (glob {glob})" if glob else "")
    if not lines:
        return ToolResult(text=f"No matches for /{pattern}/ in {where}")
    summary = f"{len(lines)} matching lines in {files_matched} files"
    body = "\n".join([*lines, summary, stopped] if stopped else [*lines, summary])
    return ToolResult(text=cap_text(body, output_cap(ctx)))
