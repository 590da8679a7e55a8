"""A working directory whose path is not UTF-8 is refused clearly, not with a storage crash."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cli.cli_helpers import run_hermes


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses file names that are not UTF-8")
def test_run_in_a_non_utf8_directory_says_why(home: Path, tmp_path: Path) -> None:
    work = tmp_path / os.fsdecode(b"d\xe9")
    work.mkdir()
    done = run_hermes(home, "run", "hi", env={"HERMES_MODEL": "mock:echo"}, cwd=work)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr, done.stderr
    assert "not valid UTF-8" in done.stderr, done.stderr
    assert done.stdout == ""
