"""The CLI starts without cyclic collection and turns it back on once the plugins are loaded
(and, for a transport, once its own start is over)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from hermes_cli import startup_gc
from tests.cli.cli_helpers import run_hermes, write_distribution

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


GC_TRANSPORT = '''
"""A transport that reports whether cyclic collection runs at each step of its start."""
import asyncio
import gc
import sys

from hermes_core import TransportSpec, hookimpl


async def factory(ctx):
    steps = [("factory", gc.isenabled())]
    await ctx.ready
    steps.append(("ready", gc.isenabled()))
    await asyncio.sleep(0)
    steps.append(("next step", gc.isenabled(), gc.get_freeze_count() > 0))
    print("STEPS", steps, file=sys.stderr, flush=True)
    return 0


@hookimpl
def hermes_transports():
    return TransportSpec(name="gcprobe", summary="probe", factory=factory, long_running=False)
'''


def test_a_transport_starts_without_collection_until_its_first_step_after_ready(tmp_path: Path) -> None:
    """The kernel's start and what the factory does right after ``ready`` (a gateway builds its
    method tables) run without collection; it is on, with start-up frozen, from the next step."""
    home = tmp_path / "home"
    home.mkdir()
    dist = write_distribution(
        tmp_path / "site", "gcprobe", {"gcprobe_plugin": GC_TRANSPORT}, {"gcprobe": "gcprobe_plugin"}
    )
    done = run_hermes(home, "gcprobe", pythonpath=[dist], env={"HERMES_MODEL": "mock:echo"})
    assert done.returncode == 0, done.stderr
    steps = done.stderr.split("STEPS ", 1)[1].splitlines()[0]
    assert steps == "[('factory', False), ('ready', False), ('next step', True, True)]", done.stderr
