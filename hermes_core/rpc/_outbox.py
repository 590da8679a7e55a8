"""The peer's single outgoing FIFO: one sink, progress accounting, flush and drain waits.

Every frame the peer sends goes through :meth:`Outbox.put`, so wire order is enqueue order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from hermes_core.rpc._io import FrameHook, FrameWriter, StreamSink, ThreadFdSink


class Outbox:
    """Queue encoded frames to one writer and let callers wait for them to be written."""

    def __init__(
        self,
        writer: int | FrameWriter,
        loop: asyncio.AbstractEventLoop,
        on_lost: Callable[[BaseException], None],
    ) -> None:
        """Start the writer.

        :param writer: a descriptor (written from a thread) or a ``StreamWriter``-like object.
        :param loop: the running loop.
        :param on_lost: called once on the loop when the output fails (the host is gone).
        """
        self._loop = loop
        self._on_lost = on_lost
        self._sink: ThreadFdSink | StreamSink
        if isinstance(writer, int):
            self._sink = ThreadFdSink(writer, loop, self._written, self._lost)
        else:
            self._sink = StreamSink(writer, self._written, self._lost)
        self._frames_in = self._frames_out = self._bytes_in = self._bytes_out = 0
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[bool]]] = []
        self._open = True
        self._stopped = False

    @property
    def open(self) -> bool:
        """Whether frames are still accepted (output not lost, outbox not closed)."""
        return self._open

    @property
    def pending_bytes(self) -> int:
        """Bytes accepted but not yet written."""
        return self._bytes_in - self._bytes_out

    def put(self, frame: bytes) -> bool:
        """Accept one encoded frame.

        :param frame: the frame bytes, newline included.
        :returns: ``False`` if dropped because the outbox is no longer open.
        """
        if not self._open:
            return False
        self._frames_in += 1
        self._bytes_in += len(frame)
        self._sink.put(frame)
        return True

    def arm(self, hook: FrameHook) -> None:
        """Pass every frame accepted from now on through ``hook`` before it is written.

        A frame the hook withholds, or writes twice, still counts as one written frame of its own
        size, so :meth:`flush` and :meth:`drain` work as before.

        :param hook: the hook (see :class:`hermes_core.rpc.FrameHook`).
        """
        if self._open:
            self._sink.arm(hook)

    async def flush(self, timeout: float | None) -> bool:
        """Wait until every frame accepted so far is written.

        :param timeout: seconds, or ``None`` for no limit.
        :returns: ``True`` when written, ``False`` on timeout or lost output.
        """
        target = self._frames_in
        return await self._wait_until(lambda: self._frames_out >= target, timeout)

    async def drain(self, max_pending_bytes: int) -> bool:
        """Wait until no more than ``max_pending_bytes`` are queued.

        :param max_pending_bytes: the threshold.
        :returns: ``True`` once below it, ``False`` if the output is gone.
        """
        return await self._wait_until(lambda: self.pending_bytes <= max_pending_bytes, None)

    async def close(self, timeout: float) -> None:
        """Flush, refuse further frames and stop the writer.

        :param timeout: bound in seconds for the flush and again for the writer to end.
        """
        if self._stopped:
            return
        self._stopped = True
        if self._open:
            await self.flush(timeout)
        self._open = False
        self._release_waiters()
        await self._sink.stop(timeout)

    def _written(self, frames: int, nbytes: int) -> None:
        self._frames_out += frames
        self._bytes_out += nbytes
        if self._waiters:
            still = []
            for ready, future in self._waiters:
                if future.done():
                    continue
                if ready():
                    future.set_result(True)
                else:
                    still.append((ready, future))
            self._waiters = still

    def _lost(self, exc: BaseException) -> None:
        if not self._open:
            return
        self._open = False
        self._release_waiters()
        self._on_lost(exc)

    async def _wait_until(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        if ready():
            return True
        if not self._open:
            return False
        future: asyncio.Future[bool] = self._loop.create_future()
        self._waiters.append((ready, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return False

    def _release_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for _, future in waiters:
            if not future.done():
                future.set_result(False)
