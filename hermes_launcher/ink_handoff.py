"""``hermes --tui`` starts its gateway while Node is still loading the Ink TUI
(docs/protocols/tui-gateway.md#starting-it).

The TUI starts its gateway only once its bundle is loaded, and the gateway then needs about as long
again to import the kernel, so the two used to run one after the other. Now ``hermes --tui`` binds a
Unix socket in a private folder and starts a *pre-started gateway* (:func:`prestart`) before it
becomes ``node``. That process imports what ``hermes tui`` needs and waits on the socket. When the
TUI runs its gateway command, the launcher script (:func:`hand_over`) connects and passes its own
standard input, output and error (the TUI's pipes) over the socket; the pre-started gateway puts
them in place of its own and runs ``hermes tui`` on them. The launcher stays as the TUI's child
until that gateway exits, passing on its exit status and the signals the TUI sends.

Nothing here changes what the TUI and the gateway say to each other: frames go straight through
the TUI's pipes. When there is no pre-started gateway to take the pipes (it is gone, or a second
gateway is asked for), the launcher runs ``hermes tui`` itself, as before. A pre-started gateway
that is not claimed within :data:`CLAIM_TIMEOUT_S`, or whose parent (the TUI) is gone, exits.
Standard library only: this runs before anything else is imported.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import time
from collections.abc import Sequence
from pathlib import Path

SOCKET_ENV = "HERMES_INK_GATEWAY_SOCKET"
"""Where the launcher finds the pre-started gateway (set by ``hermes --tui`` for ``node``)."""
CLAIM_TIMEOUT_S = 120.0
# What ``hermes tui`` imports on its way to the first frame (the costly ones, from
# ``python -X importtime``), imported while Node loads; a name missing here only costs time.
WARM_MODULES = (
    "hermes_cli.main",
    "hermes_cli.app",
    "hermes_cli.cmd_transport",
    "hermes_cli.paths",
    "hermes_cli.store",
    "hermes_cli.dotenv",
    "hermes_core",
    "hermes_core.settings",
    "hermes_core.loader",
    "hermes_core.session.table",
    "hermes_core.lease_owner",
    "hermes_core.model_choice",
    "hermes_core.approvals.guards",
    "stevedore",
    "platformdirs",
    "uvloop",
    "sqlite3",
    "jsonrpcserver",
    "hermes_tui_gateway.plugin",
    "hermes_tui_gateway.gateway",
    "hermes_tui_gateway.serve",
    "hermes_tui_gateway.methods_attach",
    "hermes_tui_gateway.methods_prompt",
    "hermes_sqlite.store",
    "hermes_mock.provider",
    "hermes_mcp.manager",
)
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def prestart(listener_fd: int, argv: Sequence[str], parent: int) -> int:
    """Run as the pre-started gateway: warm up, wait for the TUI's pipes, run ``hermes ARGV``.

    :param listener_fd: the bound, listening Unix socket (inherited).
    :param argv: the ``hermes`` arguments (plugin-selection flags, then ``tui``).
    :param parent: the pid of ``hermes --tui`` (then ``node``); when it is gone, give up.
    :returns: the exit status (0 when nobody claimed the pipes).
    """
    listener = socket.socket(fileno=listener_fd)
    path = listener.getsockname()
    _warm()
    conn = _claim(listener, parent)
    listener.close()
    _remove(path)
    if conn is None:
        return 0
    with conn:
        try:
            _message, fds, _flags, _addr = socket.recv_fds(conn, 16, 3)
        except OSError:
            return 0
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return 0
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        conn.sendall(f"{os.getpid()}\n".encode())
        code = 1
        try:
            from hermes_launcher import main

            code = main(list(argv))
        finally:
            with contextlib.suppress(OSError):
                conn.sendall(bytes([code & 0xFF]))
        return code


def _warm() -> None:
    import importlib

    for name in WARM_MODULES:
        # A module that fails here fails again, with its message, when hermes tui imports it.
        with contextlib.suppress(Exception, SystemExit):
            importlib.import_module(name)


def _claim(listener: socket.socket, parent: int) -> socket.socket | None:
    deadline = time.monotonic() + CLAIM_TIMEOUT_S
    while time.monotonic() < deadline:
        if os.getppid() != parent:
            return None  # hermes --tui / node is gone
        ready, _, _ = select.select([listener], [], [], 0.25)
        if ready:
            try:
                conn, _addr = listener.accept()
            except OSError:
                continue
            conn.setblocking(True)
            return conn
    return None


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
    shutil.rmtree(Path(path).parent, ignore_errors=True)


def hand_over() -> None:
    """In the launcher the TUI runs: give stdio to the pre-started gateway and exit with its
    status. Returns (to run ``hermes tui`` here) when there is none to take it."""
    path = os.environ.pop(SOCKET_ENV, "")
    if not path:
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [b"stdio"], [0, 1, 2])
        ack = b""
        while not ack.endswith(b"\n"):
            chunk = conn.recv(64)
            if not chunk:
                break
            ack += chunk
        pid = int(ack) if ack.endswith(b"\n") else 0
    except (OSError, ValueError):
        pid = 0
    if pid <= 0:
        conn.close()
        return
    # The gateway has the pipes now; keep only a quiet copy of them here.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    status = b""
    while True:
        try:
            chunk = conn.recv(1)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        status = chunk
    os._exit(status[0] if status else 1)
