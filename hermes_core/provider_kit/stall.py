"""One timer for every read of a streamed body: the stall timeout without a timer per read.

A stall timeout bounds each read: the upstream may stay silent that long, no longer. With a
timer per read (``asyncio.timeout``, or aiohttp's ``sock_read``, which re-arms the socket's timer
on every packet) a busy stream sets up and cancels one timer per token. :class:`StallWatch`
keeps one: a read only moves the deadline, and the timer, when it fires before the deadline
then in force, re-arms itself there; when it fires past it during a read, that read is cancelled
and raises the caller's stall error instead (what ``asyncio.timeout`` does, once per stall rather
than once per read).
"""

from __future__ import annotations

import asyncio
from typing import Any


class StallWatch:
    """Bounds each :meth:`read` of one stream by ``seconds`` of silence.

    :param seconds: how long one read may wait.
    :param stalled: the exception a late read raises (a class or a factory).
    """

    __slots__ = ("_deadline", "_fired", "_loop", "_reader", "_stalled", "_timer", "seconds")

    def __init__(self, seconds: float, stalled: Any) -> None:
        self.seconds = seconds
        self._stalled = stalled
        self._loop = asyncio.get_running_loop()
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task inside a read, if any
        self._fired = False

    async def read(self, stream: Any) -> bytes:
        """Return ``await stream.readany()``, raising the stall error when it waits too long."""
        loop = self._loop
        self._deadline = loop.time() + self.seconds
        if self._timer is None:
            self._timer = loop.call_at(self._deadline, self._on_timer)
        task = asyncio.current_task()
        cancelling = task.cancelling() if task is not None else 0
        self._reader = task
        try:
            data: bytes = await stream.readany()
            return data
        except asyncio.CancelledError:
            if self._fired and task is not None:
                self._fired = False
                if task.uncancel() <= cancelling:  # our cancel alone (not the caller's too)
                    raise self._stalled() from None
            raise
        finally:
            self._reader = None

    def _on_timer(self) -> None:
        self._timer = None
        task = self._reader
        if task is None:
            return  # between reads: the next read arms a new timer
        if self._loop.time() < self._deadline:
            self._timer = self._loop.call_at(self._deadline, self._on_timer)
            return
        self._fired = True
        task.cancel()

    def close(self) -> None:
        """Drop the pending timer (the stream is done)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
