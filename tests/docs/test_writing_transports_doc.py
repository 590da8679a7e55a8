"""docs/writing-transports.md runs as printed: the driving script makes the output it shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs import snippets

PAGE = "writing-transports.md"


def test_the_driving_script_prints_what_the_page_shows(tmp_path: Path) -> None:
    snippets.write(PAGE, tmp_path, only=("drive.py",))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    result = subprocess.run(
        [sys.executable, "drive.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == snippets.console_output(PAGE, "python drive.py")
    assert (tmp_path / "note.txt").read_text() == "hi"  # written once, by the approved call
