"""Read the code of a docs page: the ``# file: PATH`` blocks and the console transcripts.

The pages under docs/ that teach plugin authors hold whole files; the tests write them out
exactly as printed, so a page and the code it shows cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
_FILE_BLOCK = re.compile(r"^```\w*\n# file: (\S+)\n(.*?)^```", re.S | re.M)
_CONSOLE = re.compile(r"^```console\n(.*?)^```", re.S | re.M)


def files(page: str) -> dict[str, str]:
    """Return ``path → content`` of every ``# file: PATH`` block of ``docs/<page>``, in order."""
    found = {m.group(1): m.group(2) for m in _FILE_BLOCK.finditer((DOCS / page).read_text("utf-8"))}
    assert found, f"docs/{page} has no '# file:' blocks"
    return found


def write(page: str, root: Path, *, only: tuple[str, ...] = ()) -> list[Path]:
    """Write the file blocks of ``page`` below ``root`` (those whose path starts with ``only``)."""
    written = []
    for name, content in files(page).items():
        if only and not name.startswith(only):
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def console_output(page: str, command: str) -> str:
    """Return what a ``console`` block of ``page`` shows after ``$ COMMAND`` (up to the next ``$``)."""
    for block in _CONSOLE.finditer((DOCS / page).read_text("utf-8")):
        lines = block.group(1).splitlines()
        if f"$ {command}" in lines:
            rest = lines[lines.index(f"$ {command}") + 1 :]
            end = next((i for i, line in enumerate(rest) if line.startswith("$ ")), len(rest))
            return "\n".join(rest[:end]) + "\n"
    raise AssertionError(f"docs/{page} shows no '$ {command}'")
