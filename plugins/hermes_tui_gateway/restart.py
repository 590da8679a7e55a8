"""A scenario's ``restart`` fault on a listener: the process really restarts
(docs/reference/scenarios.md#faults).

The listener and every connection close at once; running turns end (their events reach the
session's event log); the gateway shuts down like on SIGTERM, the kernel stops, and as the
interpreter exits the process replaces itself (``exec``) with the same command, listening on
the same port, with the same storage. Nothing but what the storage kept survives, as after a
real restart; a host reconnects and catches up from its cursor.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time

log = logging.getLogger("hermes.tui")


def same_command(where: str) -> list[str]:
    """Return this process's command line with ``--ws`` set to ``where`` (the bound port)."""
    args = list(sys.argv[1:])
    out: list[str] = []
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--ws" and index + 1 < len(args):
            out += ["--ws", where]
            skip = True
        elif arg.startswith("--ws="):
            out.append(f"--ws={where}")
        else:
            out.append(arg)
    return [sys.executable, sys.argv[0], *out]


def exec_at_exit(where: str, delay_ms: int) -> None:
    """Once the interpreter has shut down cleanly, wait ``delay_ms`` and run the same command again."""
    command = same_command(where)

    def again() -> None:
        time.sleep(delay_ms / 1000)
        sys.stderr.flush()
        os.execv(command[0], command)

    log.warning("tui: restarting the process on %s after an injected restart", where)
    atexit.register(again)
