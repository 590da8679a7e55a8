"""Find the line of a key in TOML text, so a scenario error can name where it is.

``tomllib`` reports lines for syntax errors only; a value that parses but means nothing (an
unknown action, a negative delay) is found here by walking the table headers and key lines the
way TOML nests them: ``[[turns]]`` opens the next element of ``turns``, ``[[turns.steps]]`` the
next step of the latest turn, and ``key = …`` belongs to the table opened last.
"""

from __future__ import annotations

import re

Path = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\- \"]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=")


def key_lines(text: str) -> dict[Path, int]:
    """Map each table and key path of a TOML document to its 1-based line.

    :param text: the document (already known to parse).
    :returns: ``{("turns", 0, "steps", 1, "chunks"): 14, …}``; array elements map to their header.
    """
    found: dict[Path, int] = {}
    counts: dict[Path, int] = {}
    current: Path = ()
    in_multiline: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if in_multiline is not None:
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        header = _HEADER.match(line)
        if header is not None and not _KEY.match(line):
            names = [part.strip().strip('"') for part in header.group(2).split(".")]
            current = _resolve(names, counts, header.group(1) == "[[")
            found.setdefault(current, number)
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        parts = tuple(part.strip() for part in key.group(1).split("."))
        found.setdefault(current + parts, number)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_multiline = quote
    return found


def _resolve(names: list[str], counts: dict[Path, int], array: bool) -> Path:
    """Turn a header's dotted names into a path, indexing arrays of tables as TOML does."""
    path: Path = ()
    for position, name in enumerate(names):
        path = (*path, name)
        last = position == len(names) - 1
        if last and array:
            index = counts.get(path, 0)
            counts[path] = index + 1
            path = (*path, index)
        elif not last and path in counts:
            path = (*path, counts[path] - 1)
    return path


def line_of(lines: dict[Path, int], path: Path) -> int:
    """Return the line of ``path``, or of its nearest ancestor that has one (1 when none does)."""
    for end in range(len(path), 0, -1):
        number = lines.get(path[:end])
        if number is not None:
            return number
    return 1
