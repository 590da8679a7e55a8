"""The repository names no path outside itself: everything a reader or a test needs is in it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Spelled in pieces so that this file does not match itself.
OUTSIDE = re.compile(
    "|".join(
        [
            r"shared" + r"/(spec|acp)\b",
            r"\.\./" + r"shared\b",
            r"steering" + r" repo",
            r"shared" + r" specs?\b",
            r"design" + r" specs\b",
            r"HERMES_" + r"SHARED_DIR",
        ]
    ),
    re.IGNORECASE,
)


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    suffixes = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ""}
    chosen = [name for name in listed if name and Path(name).suffix in suffixes]
    return [ROOT / name for name in chosen if (ROOT / name).is_file()]


def test_no_file_points_outside_the_repository() -> None:
    files = _tracked_text_files()
    assert any(f.name == "README.md" for f in files)
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
