"""What run events show of a tool's file change and output (docs/reference/api-server.md#run-events)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core import FileChange

DIFF_CHARS = 20_000  # a longer diff is cut, with a last line saying so
DIFF_INPUT_CHARS = 400_000  # larger files are not diffed at all (difflib is quadratic at worst)
PROGRESS_CHARS = 4_000  # the newest output of one coalesced tool.progress event


def unified_diff(change: FileChange, cwd: Path | None = None) -> str | None:
    """Return a unified diff of a file change, cut at :data:`DIFF_CHARS`; None when too large.

    :param cwd: the session's workspace: a path inside it is shown relative to it.
    """
    old = change.old_text or ""
    path = change.path
    if cwd is not None and Path(path).is_relative_to(cwd):
        path = str(Path(path).relative_to(cwd))
    if len(old) + len(change.new_text) > DIFF_INPUT_CHARS:
        return None
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        change.new_text.splitlines(keepends=True),
        fromfile="/dev/null" if change.old_text is None else f"a/{path}",
        tofile=f"b/{path}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text) > DIFF_CHARS:
        text = text[:DIFF_CHARS].rsplit("\n", 1)[0] + "\n… (diff cut)\n"
    return text


def progress_tail(text: str) -> str:
    """Keep the newest :data:`PROGRESS_CHARS` of a tool's coalesced output."""
    return text if len(text) <= PROGRESS_CHARS else "…" + text[-PROGRESS_CHARS:]
