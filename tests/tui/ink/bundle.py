"""The real Ink TUI for the tests: upstream's ``hermes_cli/tui_dist/entry.js`` from the
``hermes-agent`` 0.19.0 wheel, fetched at test time into ``.ci/ink-tui`` (gitignored).

``HERMES_INK_TUI`` (a path to ``entry.js``) is used as it is when set. Otherwise the wheel is
downloaded once with ``pip download hermes-agent==0.19.0 --no-deps`` (it is never installed) and
only ``entry.js`` is extracted. Node and tmux must be on ``PATH``. A missing piece fails the test
with a message saying what to install; ``HERMES_TEST_SKIP_INK=1`` skips these tests on purpose
(never with ``CI=true``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".ci" / "ink-tui"
WHEEL_SPEC = "hermes-agent==0.19.0"
MEMBER = "hermes_cli/tui_dist/entry.js"
# Extracted under the wheel's layout, so the bundle's own "root" (../../) is this folder.
EXTRACTED = CACHE / "hermes-agent-0.19.0" / MEMBER

skip_unless_wanted = pytest.mark.skipif(
    os.environ.get("HERMES_TEST_SKIP_INK") == "1" and os.environ.get("CI") != "true",
    reason="HERMES_TEST_SKIP_INK=1 was set",
)


def _download() -> Path:
    wheels = CACHE / "wheel"
    found = sorted(wheels.glob("hermes_agent-0.19.0-*.whl")) if wheels.is_dir() else []
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", WHEEL_SPEC, "--no-deps", "-d", str(wheels), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = sorted(wheels.glob("hermes_agent-0.19.0-*.whl"))
    assert done.returncode == 0 and found, (
        f"the Ink TUI tests need the {WHEEL_SPEC} wheel from PyPI (for its entry.js) and "
        f"`pip download {WHEEL_SPEC} --no-deps` failed:\n{done.stderr[-2000:]}\n"
        "download it by hand into .ci/ink-tui/wheel/, or point HERMES_INK_TUI at an entry.js"
    )
    return found[0]


@functools.cache
def entry_js() -> Path:
    """Return the Ink TUI bundle, fetching it on first use."""
    named = os.environ.get("HERMES_INK_TUI", "").strip()
    if named:
        path = Path(named)
        assert path.is_file(), f"HERMES_INK_TUI={named} is not a file"
        return path
    if not EXTRACTED.is_file():
        wheel = _download()
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(MEMBER)
        EXTRACTED.parent.mkdir(parents=True, exist_ok=True)
        tmp = EXTRACTED.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(EXTRACTED)
    return EXTRACTED


@functools.cache
def node() -> str:
    """Return ``node`` (20 or newer), or fail saying how to get it."""
    found = shutil.which("node")
    assert found, "the Ink TUI tests need Node.js 20+ on PATH (apt-get install nodejs)"
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout
    major = int(version.strip().lstrip("v").split(".")[0] or 0)
    assert major >= 20, f"the Ink TUI needs Node.js 20 or newer; {found} is {version.strip()}"
    return found


@functools.cache
def tmux() -> str:
    """Return ``tmux``, or fail saying how to get it."""
    found = shutil.which("tmux")
    assert found, "the Ink TUI tests drive the TUI in tmux: install it (apt-get install tmux)"
    return found
