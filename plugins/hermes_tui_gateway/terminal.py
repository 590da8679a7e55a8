"""Ctrl-D in the terminal that runs ``hermes tui --ws``: end of input there stops the server.

Only a terminal is watched: a WebSocket server started with stdin at ``/dev/null`` or a pipe (a
service, a test harness) reads nothing and keeps running. A terminal is read only while this
process is in its foreground, so a server put in the background (``&``) is never stopped by the
shell's job control for reading it; it looks again every half second.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

RECHECK_S = 0.5


class TerminalEof:
    """Set ``stop`` when the terminal on ``fd`` reports end of input (Ctrl-D on an empty line).

    :param stop: the event that stops the server.
    :param fd: the descriptor to watch, normally stdin.
    """

    def __init__(self, stop: asyncio.Event, fd: int = 0) -> None:
        self._stop = stop
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._watching = False
        self._later: asyncio.TimerHandle | None = None
        self._closed = False
        try:
            terminal = os.isatty(fd)
        except OSError:
            terminal = False
        if terminal:
            self._watch()

    def close(self) -> None:
        """Stop watching."""
        self._closed = True
        if self._later is not None:
            self._later.cancel()
        self._unwatch()

    def _watch(self) -> None:
        self._later = None
        if self._closed or self._watching:
            return
        try:
            self._loop.add_reader(self._fd, self._readable)
        except (NotImplementedError, OSError, ValueError, RuntimeError):
            return
        self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            self._watching = False
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._fd)

    def _in_foreground(self) -> bool:
        try:
            return os.tcgetpgrp(self._fd) == os.getpgrp()
        except OSError:
            return True  # not our controlling terminal: no job control applies to reading it

    def _readable(self) -> None:
        if not self._in_foreground():
            self._unwatch()
            self._later = self._loop.call_later(RECHECK_S, self._watch)
            return
        try:
            data = os.read(self._fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""  # the terminal went away (EIO): as good as end of input
        if not data:
            self._unwatch()
            self._stop.set()
