"""The CLI starts without cyclic collection and turns it back on once the plugins are loaded."""

from __future__ import annotations

import gc
import subprocess
import sys

from hermes_cli import startup_gc

PROBE = """
import gc, sys
import hermes_cli.startup_gc as startup_gc
seen = []
original = startup_gc.settle
def watched():
    seen.append(("before", gc.isenabled()))
    original()
    seen.append(("after", gc.isenabled(), gc.get_freeze_count() > 0))
startup_gc.settle = watched
from hermes_cli.main import main
code = main(["plugins"])
print(seen, gc.isenabled(), code, file=sys.stderr)
"""


def test_collection_is_paused_during_start_up_and_frozen_after_the_plugins_load() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("[('before', False), ('after', True, True)] True"), done.stderr


def test_settle_and_resume_leave_collection_on() -> None:
    assert gc.isenabled()
    startup_gc.pause()
    assert not gc.isenabled()
    startup_gc.resume()
    assert gc.isenabled()
    startup_gc.settle()  # already on: nothing frozen, nothing changed
    assert gc.isenabled()
