"""One timer for every read of a streamed body: the stall timeout without a timer per read.

A stall timeout bounds each read: the upstream may stay silent that long, no longer. With a
timer per read (``asyncio.timeout``, 7 µs a read, or aiohttp's ``sock_read``, which re-arms the
socket's timer on every packet) a busy stream sets up and cancels one timer per token.
:class:`StallWatch` keeps one: a read only moves the deadline, and the timer, when it fires before
the deadline then in force, re-arms itself there. When it fires past the deadline during a read,
it fails the stream (``set_exception``, which aiohttp's body reader has), so the pending read
raises the stall error; between reads it does nothing (the caller's own work is not timed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class StallWatch:
    """Bounds each read of ``stream`` by ``seconds`` of silence.

    The reader calls :meth:`start` before each read and sets :attr:`reading` to False after it
    (inline, so no coroutine frame is added to every read), and :meth:`close` when it is done.

    :param seconds: how long one read may wait.
    :param stream: what is read; its ``set_exception(exc)`` fails the pending read.
    :param stalled: makes the exception a late read raises.
    """

    __slots__ = ("_deadline", "_loop", "_stalled", "_stream", "_timer", "reading", "seconds")

    def __init__(self, seconds: float, stream: Any, stalled: Callable[[], BaseException]) -> None:
        self.seconds = seconds
        self._stream = stream
        self._stalled = stalled
        self._loop = asyncio.get_running_loop()
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        #: True while a read waits (set by :meth:`start`, cleared by the reader).
        self.reading = False

    @staticmethod
    def fits(stream: Any) -> bool:
        """Whether ``stream`` can be failed from outside (else bound each read with a timer)."""
        return callable(getattr(stream, "set_exception", None))

    def start(self) -> None:
        """A read begins: it may wait ``seconds`` from now."""
        self._deadline = self._loop.time() + self.seconds
        self.reading = True
        if self._timer is None:
            self._timer = self._loop.call_at(self._deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self.reading:
            return  # between reads: the next read arms a new timer
        if self._loop.time() < self._deadline:
            self._timer = self._loop.call_at(self._deadline, self._on_timer)
            return
        self._stream.set_exception(self._stalled())

    def close(self) -> None:
        """Drop the pending timer (the stream is done)."""
        self.reading = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
