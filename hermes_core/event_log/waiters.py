"""Who waits for a session log's numbers to be stored (``kernel.events.durable``).

A transport shows an event only once it is stored, so it waits on the log for its number; each
wait is a future here, resolved when a write stores the number or when the log stops without
storing it (the log then tells the waiter so). :class:`~hermes_core.event_log.writer.SessionLog`
holds one :class:`StoredWaiters` and releases it after every outcome.
"""

from __future__ import annotations

import asyncio


class StoredWaiters:
    """The waits on one session's log, each for a number to be stored."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    def add(self, seq: int) -> asyncio.Future[None]:
        """A future resolved once ``seq`` is stored or the log stops (see :meth:`release`)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((seq, future))
        return future

    def release(self, durable: int, stopped: bool) -> bool:
        """Resolve the waits for numbers through ``durable`` (every wait when the log ``stopped``);
        tell whether any still waits."""
        keep = []
        for seq, future in self._waiting:
            if seq <= durable or stopped:
                if not future.done():
                    future.set_result(None)
            else:
                keep.append((seq, future))
        self._waiting = keep
        return bool(keep)
