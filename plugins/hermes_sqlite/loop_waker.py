"""The inbox of a loop's finished database jobs, and the means to wake that loop from the
database thread (see :mod:`hermes_sqlite.worker`)."""

from __future__ import annotations

import asyncio
import collections
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

Job = Callable[[sqlite3.Connection], Any]
Outcome = tuple["asyncio.Future[Any]", Any, BaseException | None]
#: A submitted job: the job, the waker of its loop, its future, and whether it may be grouped.
Item = tuple[Job, "LoopWaker", "asyncio.Future[Any]", bool]

# Futures settled per pass of the loop. Each settled future wakes its task in the loop's next
# iteration, so a batch of hundreds (200 streams finishing together) made one iteration tens of
# ms long. Settling 16 per pass, the longest stall a 2 ms timer saw in hermes api during 200
# streams fell from 45 to 36 ms, and with the API's open limit from 24 to 21 ms.
SETTLE_AT_ONCE = 16


class LoopWaker:
    """The inbox of finished jobs for one event loop, and the means to wake that loop.

    The database thread appends outcomes and calls :meth:`notify`; the loop drains them in
    :meth:`drain`. Only the first outcome after a drain writes to the pipe: ``_signalled``
    says a wake-up is on its way. The drain clears it *before* emptying the inbox and the
    thread appends *before* testing it, so no outcome is ever left without a wake-up.

    Where the loop cannot watch a file descriptor (Windows' proactor loop), the wake-up is a
    ``call_soon_threadsafe`` of :meth:`drain` instead.

    :param loop: the loop whose futures this inbox settles.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.inbox: collections.deque[Outcome] = collections.deque()
        #: Jobs submitted on this loop in the current step, not yet handed to the thread.
        self.pending: list[Item] = []
        #: Jobs this loop queued whose outcome it has not taken from the inbox yet (pending,
        #: queued, running, or done and waiting to be handed back). Touched only on the loop.
        self.outstanding = 0
        #: Jobs run inline on this loop in the current step (see DbThread.call).
        self.streak = 0
        self._signalled = False
        # Guards the pipe's write end against closing while the database thread writes.
        self._lock = threading.Lock()
        self._read_fd = -1
        self._write_fd = -1
        self._piped = False
        if os.name == "posix":
            read_fd, write_fd = os.pipe()
            try:
                os.set_blocking(read_fd, False)
                os.set_blocking(write_fd, False)
                loop.add_reader(read_fd, self.drain)
            except (NotImplementedError, OSError):
                os.close(read_fd)
                os.close(write_fd)
            else:
                self._read_fd, self._write_fd = read_fd, write_fd
                self._piped = True

    def notify(self) -> None:
        """Make sure the loop will drain the inbox (runs on the database thread)."""
        if self._signalled:
            return
        self._signalled = True
        if self._piped:
            with self._lock:
                if self._write_fd >= 0:
                    try:
                        os.write(self._write_fd, b"\0")
                    except BlockingIOError:
                        pass  # the pipe is full of wake-ups already
            return
        try:
            self.loop.call_soon_threadsafe(self.drain)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting for these results any more

    def drain(self) -> None:
        """Settle finished jobs' futures (runs on the loop), at most SETTLE_AT_ONCE per pass."""
        if self._read_fd >= 0:
            try:
                os.read(self._read_fd, 64)
            except OSError:
                pass  # nothing to read (EAGAIN) or already closed
        self._signalled = False
        self._settle()

    def _settle(self, limit: int = SETTLE_AT_ONCE) -> None:
        inbox = self.inbox
        left = limit
        while inbox:
            if not left:
                # The rest next pass: everything woken here runs in the loop's next iteration,
                # and a batch of hundreds would make that one iteration tens of ms long.
                self.loop.call_soon(self._settle)
                return
            future, result, exc = inbox.popleft()
            self.outstanding -= 1
            if future.cancelled():
                continue
            left -= 1
            if exc is None:
                future.set_result(result)
            else:
                future.set_exception(exc)

    def end_streak(self) -> None:
        """Start counting inline jobs afresh (scheduled at the first of a loop step)."""
        self.streak = 0

    def close(self) -> None:
        """Stop watching the pipe and close it (runs on the loop, or after it has closed)."""
        with self._lock:
            read_fd, write_fd = self._read_fd, self._write_fd
            if write_fd < 0:
                return
            self._read_fd = self._write_fd = -1
        if not self.loop.is_closed():
            self.loop.remove_reader(read_fd)
        os.close(read_fd)
        os.close(write_fd)


def drain_and_close(waker: LoopWaker) -> None:
    """Settle everything the inbox still holds, then close the waker (runs on its loop)."""
    waker.drain()
    waker._settle(limit=len(waker.inbox))
    waker.close()
