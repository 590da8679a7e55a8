"""Build plugin distributions out of the docs: every fenced block under a ``<!-- file: PATH -->``
marker is one file, so what the docs show is exactly what the tests install and run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKED_BLOCK = re.compile(r"<!-- file: (\S+) -->\n(```|~~~)[\w-]*\n(.*?)\n\2\n", re.DOTALL)


def doc_files(doc: str) -> dict[str, str]:
    """Return ``relative path → text`` for every marked block of ``docs/<doc>``.

    :raises AssertionError: the page has no marked block, or two blocks name the same file.
    """
    files: dict[str, str] = {}
    for match in MARKED_BLOCK.finditer((DOCS / doc).read_text(encoding="utf-8")):
        path, text = match.group(1), match.group(3) + "\n"
        assert path not in files, f"{doc}: two blocks for {path}"
        files[path] = text
    assert files, f"{doc} has no <!-- file: ... --> blocks"
    return files


def write_tree(files: dict[str, str], root: Path) -> Path:
    """Write the files below ``root`` and return it."""
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def pip_install(project: Path, target: Path) -> None:
    """Install a project the quick way: no dependencies, no build isolation, into ``target``.

    Put ``target`` on ``PYTHONPATH`` and its ``hermes.plugins`` entry points are found.
    """
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
