"""Keep a stdio transport's stdout for frames only.

Once a process speaks JSON-RPC on stdout, any stray byte there (a ``print()``, a C extension, a
warning, a child process writing to an inherited fd 1) corrupts the stream. The fix is to keep a
private duplicate of fd 1 for frames and point fd 1 itself somewhere harmless.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import TextIO


@dataclass(slots=True)
class ProtectedStdout:
    """The result of :func:`protect_stdout`.

    :param frame_fd: the private, non-inheritable duplicate of the original stdout; write frames
        here (pass it as the peer's ``writer``).
    :param redirect_to: where fd 1 and ``sys.stdout`` now go (``"stderr"`` or a file path).
    """

    frame_fd: int
    redirect_to: str
    _saved_stdout: TextIO | None
    _restored: bool = False

    def restore(self) -> None:
        """Point fd 1 and ``sys.stdout`` back at the original stdout (tests, in-process checks).

        ``frame_fd`` stays open and owned by the caller.
        """
        if self._restored:
            return
        self._restored = True
        current = sys.stdout
        with contextlib.suppress(Exception):
            current.flush()
        os.dup2(self.frame_fd, 1)
        sys.stdout = self._saved_stdout
        if current is not None and current is not self._saved_stdout:
            with contextlib.suppress(Exception):
                current.close()

    def redirect(self, redirect_to: str | os.PathLike[str]) -> None:
        """Send what is written to fd 1 somewhere else from now on; frames are not affected.

        Lets a transport protect stdout as its very first step and name the log file later.

        :param redirect_to: ``"stderr"`` or a file path opened for append with mode 0600.
        :raises OSError: the file cannot be opened (fd 1 is left as it was).
        """
        if self._restored:
            return
        if sys.stdout is not None:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
        target = os.fspath(redirect_to)
        _point_fd1(target)
        self.redirect_to = target


def protect_stdout(redirect_to: str | os.PathLike[str] = "stderr") -> ProtectedStdout:
    """Reserve the real stdout for frames and send everything else written to fd 1 elsewhere.

    Steps: flush ``sys.stdout``; ``frame_fd = os.dup(1)`` marked non-inheritable (so tool
    subprocesses never get it, whatever their ``close_fds``); ``os.dup2`` the target onto fd 1 (an
    inheritable fd, so children's stray output follows); replace ``sys.stdout`` with a
    line-buffered UTF-8 text stream on the new fd 1. Any saved reference to the old
    ``sys.stdout`` also lands on the target, since it writes to fd 1.

    :param redirect_to: ``"stderr"`` (TUI gateway) or a file path opened for append with mode
        0600 (ACP's log file).
    :returns: the frame descriptor and a way to undo the redirection.
    """
    saved = sys.stdout
    if saved is not None:
        with contextlib.suppress(Exception):
            saved.flush()
    frame_fd = os.dup(1)
    os.set_inheritable(frame_fd, False)
    target = os.fspath(redirect_to)
    _point_fd1(target)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
    return ProtectedStdout(frame_fd=frame_fd, redirect_to=target, _saved_stdout=saved)


def _point_fd1(target: str) -> None:
    """Make fd 1 a duplicate of stderr or of ``target`` opened for append (mode 0600)."""
    if target == "stderr":
        if sys.stderr is not None:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
        os.dup2(2, 1)
        return
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 1)
    finally:
        os.close(fd)
