"""Answer ``initialize`` while the CLI is still loading (docs/reference/acp.md#start-up).

``hermes acp`` declares :func:`begin` in the ``hermes.early`` entry-point group, so the CLI calls
it before importing click, stevedore, pydantic or any plugin. :func:`begin` first protects stdout
(frames get a private duplicate of fd 1; fd 1 itself goes to stderr until the log file is known),
then starts a thread that waits for the first line on stdin. If that line is a well-formed
``initialize``, the thread answers it from static data at once. When the transport factory runs,
:func:`take` stops the thread and hands over everything it saw: the protected stdout, the
request it answered (so the connection records the client's capabilities) and the bytes it read
after it. Anything other than a well-formed ``initialize`` is left unanswered for the peer.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes_core.rpc import ProtectedStdout

#: The longest first line the thread buffers before leaving everything to the peer.
LINE_CAP = 1 << 20
#: How often the waiting thread looks at its stop flag.
POLL_S = 0.01
#: The GIL switch interval while the thread waits, so it gets to answer between imports.
WAITING_SWITCH_S = 0.0005

_pending: EarlyHandshake | None = None


class EarlyHandshake:
    """The stdout guard and the first-line reader started before the plugins load."""

    def __init__(self, guard: ProtectedStdout, fd: int = 0, *, mcp_selected: bool = True) -> None:
        """Take over stdin's first line.

        :param guard: the protected stdout (frames go to ``guard.frame_fd``).
        :param fd: the descriptor to read (stdin).
        :param mcp_selected: whether the plugin selection includes ``mcp`` (what ``initialize``
            advertises for editor MCP servers).
        """
        self.guard = guard
        self._mcp_selected = mcp_selected
        self.answered: dict[str, Any] | None = None
        self.rest = b""
        self._fd = fd
        self._lock = threading.Lock()
        self._stopped = False
        self._switch = sys.getswitchinterval()
        self._thread = threading.Thread(target=self._run, name="hermes-acp-early", daemon=True)

    def start(self) -> None:
        """Start the reader thread."""
        sys.setswitchinterval(WAITING_SWITCH_S)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (finishing an answer it is writing) and restore the switch interval."""
        with self._lock:
            self._stopped = True
        self._thread.join()
        sys.setswitchinterval(self._switch)

    def _read_first_line(self) -> bytes:
        data = b""
        while b"\n" not in data and len(data) <= LINE_CAP:
            with self._lock:
                if self._stopped:
                    break
            try:
                ready, _, _ = select.select([self._fd], [], [], POLL_S)
                if not ready:
                    continue
                chunk = os.read(self._fd, 1 << 16)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            data += chunk
        return data

    def _run(self) -> None:
        from hermes_acp.static import initialize_frame, split_initialize
        from hermes_core import __version__
        from hermes_core.rpc import encode_frame

        data = self._read_first_line()
        with self._lock:
            self.rest = data
            try:
                found = None if self._stopped else split_initialize(data)
                if found is None:
                    return
                mcp = None if self._mcp_selected else False
                frame = encode_frame(initialize_frame(found[0], __version__, mcp_loaded=mcp))
            except Exception:
                return  # never lose input: the peer gets every byte read so far
            finally:
                sys.setswitchinterval(self._switch)
            self.answered, self.rest = found
            with contextlib.suppress(OSError):  # the client went away; the peer sees EOF
                _write_all(self.guard.frame_fd, frame)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def begin(args: list[str], selected: Callable[[str], bool] | None = None) -> None:
    """Start the early handshake for a plain ``hermes acp`` whose stdin is not a terminal.

    :param args: the arguments after ``acp`` (any option, e.g. ``--check``, means no early step).
    :param selected: tells whether the plugin selection includes a plugin name.
    """
    global _pending
    if args or _pending is not None:
        return
    try:
        if os.isatty(0):
            return
        from hermes_core.rpc import protect_stdout

        mcp_selected = selected is None or selected("mcp")
        handshake = EarlyHandshake(protect_stdout("stderr"), mcp_selected=mcp_selected)
    except (OSError, ValueError):
        return
    handshake.start()
    _pending = handshake


def take() -> EarlyHandshake | None:
    """Stop the early handshake, if one was started in this process, and return it.

    :returns: the stopped handshake (its guard, answered request and leftover bytes), or ``None``.
    """
    global _pending
    handshake, _pending = _pending, None
    if handshake is not None:
        handshake.stop()
    return handshake
