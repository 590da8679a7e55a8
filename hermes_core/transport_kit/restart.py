"""A scenario's ``restart`` fault on a listener: the process really restarts
(docs/reference/scenarios.md#faults).

The transport stops listening, cuts its connections and shuts down as on SIGTERM (running turns
end and reach the storage); as the interpreter exits, the process replaces itself (``exec``) with
the same command, pinned to the port it had bound, so a host finds it at the same address with
nothing but what the storage kept, as after a real restart.
"""

from __future__ import annotations

import atexit
import os
import sys
import time


def same_command(argv: list[str], option: str, value: str) -> list[str]:
    """Return a command line (the one the transport was started with) with ``option`` set to ``value``
    (added if absent), run by this interpreter.

    :param option: a long option taking one value, e.g. ``--ws`` or ``--port``.
    """
    args = list(argv)
    out: list[str] = []
    skip = False
    found = False
    for index, arg in enumerate(args[1:], start=1):
        if skip:
            skip = False
            continue
        if arg == option and index + 1 < len(args):
            out += [option, value]
            skip = found = True
        elif arg.startswith(f"{option}="):
            out.append(f"{option}={value}")
            found = True
        else:
            out.append(arg)
    if not found:
        out += [option, value]
    return [sys.executable, args[0], *out]


def exec_at_exit(argv: list[str], option: str, value: str, delay_ms: int) -> list[str]:
    """Once the interpreter has shut down cleanly, wait ``delay_ms`` and run the command ``argv``
    (the one the transport was started with) again with ``option`` set to ``value``; return it."""
    command = same_command(argv, option, value)

    def again() -> None:
        time.sleep(delay_ms / 1000)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(command[0], command)

    atexit.register(again)
    return command
