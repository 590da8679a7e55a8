"""Start-up without the cyclic garbage collector.

Importing the CLI, the kernel and the plugins creates tens of thousands of long-lived objects
(modules, classes, functions) and no garbage cycles worth collecting. With the collector on, the
growing heap triggers full collections that walk all of them, in the middle of start-up. So the
command runs with the collector paused until the plugins are loaded, then moves everything alive
into the permanent generation (``gc.freeze``) and turns collection back on: later collections only
look at what the process creates from then on.

A transport command pauses collection again for its own start (the kernel starting, the
settings validated, a gateway's method tables and their models built: a few dozen collections
otherwise, before a host gets its first answer) and settles once the kernel runs and the
transport's factory has taken its first step after that (``hermes_cli/cmd_transport.py``).
"""

from __future__ import annotations

import gc


def pause() -> None:
    """Stop automatic collection while the command starts."""
    gc.disable()


def resume() -> None:
    """Turn automatic collection back on, freezing nothing."""
    gc.enable()


def settle() -> None:
    """Freeze what start-up made and collect normally from now on (safe to call twice)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
