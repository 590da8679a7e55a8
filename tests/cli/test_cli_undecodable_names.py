"""A file name that is not UTF-8 cannot break a turn.

Python hands such names over with surrogate escapes; stored as is, the tool result could not be
written to SQLite and the turn crashed (``tool_crash``). Tool results now carry U+FFFD in their
place, so the listing is stored and shown.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cli.cli_helpers import run_hermes


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses file names that are not UTF-8")
def test_list_dir_with_a_non_utf8_name_completes_and_is_stored(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / os.fsdecode(b"caf\xe9.txt")).write_text("x")
    (work / "plain.txt").write_text("y")
    env = {"HERMES_MODEL": "mock:echo"}
    done = run_hermes(home, "run", "--session", "s1", '[[tool list_dir {"path": "."}]]', env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "caf\ufffd.txt" in done.stdout
    shown = run_hermes(home, "sessions", "show", "s1")
    assert shown.returncode == 0, shown.stderr
    assert "[tool list_dir] caf\ufffd.txt" in shown.stdout.splitlines()
