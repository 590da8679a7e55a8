"""pydantic's plugin lookup on the way to the first ``session.create`` (hermes_cli/entry_points.py).

The CLI reads every distribution's ``entry_points.txt`` once; pydantic's own lookup of its
``pydantic`` entry-point group reads them all again when the first model is built. With no
distribution declaring that group the CLI answers pydantic's lookup itself; with one, pydantic
looks and loads the plugin as always. A real ``hermes tui`` is started under a wrapper that
records every ``importlib.metadata.entry_points`` call of the process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.cli_helpers import write_distribution
from tests.timing import scaled
from tests.tui.client import hermes_env

WRAPPER = """
import atexit, importlib.metadata as md, json, os, sys
asked = []
real = md.entry_points
def entry_points(**params):
    asked.append(params.get("group"))
    return real(**params)
md.entry_points = entry_points
atexit.register(lambda: open(os.environ["ASKED_OUT"], "w").write(json.dumps(asked)))
from hermes_launcher import main
sys.exit(main())
"""

PYDANTIC_PLUGIN = '''
"""A pydantic plugin that leaves a mark when pydantic loads it and changes nothing."""
import os

open(os.environ["PLUGIN_MARK"], "w").write("loaded")


class _Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = _Plugin()
'''


def _open_session(home: Path, env: dict[str, str]) -> list[str | None]:
    """Start ``hermes tui``, create a session, close it; return the entry-point groups asked for."""
    asked = home / "asked.txt"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, "tui"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=hermes_env(home, {"ASKED_OUT": str(asked), **env}),
        cwd=str(home),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"session.create","params":{}}\n')
    proc.stdin.flush()
    answer = None
    for line in proc.stdout:
        frame = json.loads(line)
        if frame.get("id") == 1:
            answer = frame
            break
    proc.stdin.close()
    assert proc.wait(scaled(30)) == 0
    assert answer is not None and "session_id" in answer["result"], answer
    groups: list[str | None] = json.loads(asked.read_text(encoding="utf-8"))
    return groups


def test_pydantic_does_not_scan_the_metadata_again_when_no_plugin_is_installed(home: Path) -> None:
    assert "pydantic" not in _open_session(home, {})


def test_an_installed_pydantic_plugin_is_still_loaded(home: Path, tmp_path: Path) -> None:
    dist = write_distribution(tmp_path / "dist", "marker", {"pydantic_marker": PYDANTIC_PLUGIN}, {})
    points = next(dist.glob("*.dist-info")) / "entry_points.txt"
    points.write_text("[pydantic]\nmarker = pydantic_marker:plugin\n", encoding="utf-8")
    mark = tmp_path / "mark.txt"
    groups = _open_session(home, {"PYTHONPATH": str(dist), "PLUGIN_MARK": str(mark)})
    assert "pydantic" in groups
    assert mark.read_text(encoding="utf-8") == "loaded"
