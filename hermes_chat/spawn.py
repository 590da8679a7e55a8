"""Start the ``hermes tui`` a chat talks to, as early as the process can.

``hermes chat`` to a session that accepts prompts is budgeted (``bench/bench_chat.py``), and
most of that time is the gateway's own start: Python, the plugins, the kernel. So the gateway
is started before the chat does anything else. For a plain ``hermes chat …`` (and ``hermes``
alone on a terminal) :func:`begin` runs as the command's early hook (``hermes_cli.early``),
before click is even imported; the command later picks the process up with :func:`take`. This
module imports nothing but the standard library and ``hermes_cli.paths``, so calling it costs
nothing the chat would not pay anyway.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LAUNCH = "import sys\nfrom hermes_launcher import main\nsys.exit(main())\n"
# Arguments after which ``hermes chat`` starts no gateway of its own (or none at all).
_NO_SPAWN = ("--attach", "--help", "-h")

_early: subprocess.Popen[bytes] | None = None


def gateway_argv(root_flags: list[str]) -> list[str]:
    """Return the command line of a ``hermes tui`` on stdio with the same plugin selection.

    :param root_flags: ``--plugin``/``--with-plugin``/``--no-plugin`` flags given to ``hermes``.
    """
    return [sys.executable, "-c", LAUNCH, *root_flags, "tui"]


def log_path() -> Path:
    """Return where a spawned gateway's stderr goes: ``<data dir>/logs/chat-gateway.log``."""
    home = os.environ.get("HERMES_HOME", "").strip()
    if home:  # what hermes_cli.paths says, without importing it (and dataclasses) before the spawn
        return Path(home).expanduser().absolute() / "logs" / "chat-gateway.log"
    from hermes_cli.paths import resolve_paths

    return resolve_paths(os.environ).data_dir / "logs" / "chat-gateway.log"


def spawn_gateway(argv: list[str], cwd: str, log: Path | None) -> subprocess.Popen[bytes]:
    """Start the gateway process; its stderr goes to ``log`` (never to the terminal).

    It gets a session of its own, so a signal meant for the terminal's foreground group does
    not reach it; closing its stdin stops it gracefully, also when the client is killed.
    """
    stderr: Any = subprocess.DEVNULL
    if log is not None:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            if log.exists() and log.stat().st_size > 4 * 1024 * 1024:
                log.replace(log.with_suffix(".log.1"))
            stderr = open(log, "ab")
        except OSError:
            stderr = subprocess.DEVNULL
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            start_new_session=True,
        )
    finally:
        if stderr is not subprocess.DEVNULL:
            stderr.close()


def begin(args: Sequence[str], selected: object = None) -> None:
    """Start the gateway for ``hermes chat ARGS`` now, unless ARGS attach or ask for help.

    :param args: the arguments after ``chat``.
    :param selected: what ``hermes_cli.early`` passes every hook (unused: the gateway child
        reads the same environment and selects the same plugins).

    Never raises: when anything goes wrong, the command starts the gateway itself later and
    reports the failure there. A gateway nobody took is stopped when the process exits (a
    usage error, say).
    """
    global _early
    if _early is not None or any(a.split("=", 1)[0] in _NO_SPAWN for a in args):
        return
    try:
        _early = spawn_gateway(gateway_argv([]), os.getcwd(), log_path())
    except Exception:
        _early = None
        return
    atexit.register(_discard)


def take(argv: list[str]) -> subprocess.Popen[bytes] | None:
    """Return the gateway :func:`begin` started, if it runs with ``argv``; the caller owns it."""
    global _early
    proc, _early = _early, None
    if proc is not None and list(proc.args) != argv:  # type: ignore[arg-type]
        _stop(proc)
        return None
    return proc


def _discard() -> None:
    global _early
    proc, _early = _early, None
    if proc is not None:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    with contextlib.suppress(OSError):
        proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(2)
        return
    with contextlib.suppress(OSError):
        proc.kill()
