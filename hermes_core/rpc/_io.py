"""Byte I/O under the JSON-RPC peer: a chunk reader over a file descriptor and two frame sinks.

The sinks take whole frames in FIFO order and write them without blocking the event loop:
:class:`ThreadFdSink` does blocking writes on one writer thread (copes with pipes, sockets,
terminals and regular files alike, which ``loop.connect_write_pipe`` does not), and
:class:`StreamSink` feeds an asyncio ``StreamWriter``-like object from one writer task.
Both report progress and loss of the output back on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import select
import stat
import threading
from collections.abc import Callable
from typing import Protocol

#: Callback on the loop after frames were written: (frame count, byte count).
Written = Callable[[int, int], None]
#: Callback on the loop once the output is gone (EPIPE, EBADF, reset...).
Lost = Callable[[BaseException], None]

_BATCH_BYTES = 256 * 1024


class ChunkReader(Protocol):
    """What the peer reads from: ``asyncio.StreamReader`` fits."""

    async def read(self, n: int = -1) -> bytes:
        """Return up to ``n`` bytes, or ``b""`` at end of input."""
        ...


class FrameWriter(Protocol):
    """What :class:`StreamSink` writes to: ``asyncio.StreamWriter`` fits."""

    def write(self, data: bytes) -> None:
        """Buffer bytes for sending."""
        ...

    async def drain(self) -> None:
        """Wait until the buffer is flushed enough; raise if the connection is lost."""
        ...


class FdReader:
    """Read chunks from a file descriptor without blocking the loop.

    Pipes, sockets and terminals use ``loop.connect_read_pipe``; a regular file (stdin redirected
    from a file) or a device the selector cannot watch (``/dev/null``) is read with ``os.read`` in
    the default executor, since such reads never wait for a peer. The descriptor is never closed
    here; its blocking flag is restored on close.
    """

    def __init__(self, fd: int) -> None:
        """Wrap a descriptor; nothing happens until the first read.

        :param fd: an open readable descriptor, owned by the caller.
        """
        self._fd = fd
        self._stream: asyncio.StreamReader | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._was_blocking: bool | None = None
        self._regular = False
        self._opened = False

    async def read(self, n: int = -1) -> bytes:
        """Return up to ``n`` bytes, ``b""`` at end of input.

        :param n: the most bytes wanted.
        :returns: the bytes read.
        """
        if not self._opened:
            await self._open(max(n, 64 * 1024))
        if self._stream is not None:
            return await self._stream.read(n)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, os.read, self._fd, n if n > 0 else _BATCH_BYTES)

    async def _open(self, limit: int) -> None:
        self._opened = True
        mode = os.fstat(self._fd).st_mode
        if stat.S_ISREG(mode) or not _pollable(self._fd):
            # A file, or a device epoll refuses (``< /dev/null``): reads never wait for a peer.
            self._regular = True
            return
        loop = asyncio.get_running_loop()
        self._was_blocking = os.get_blocking(self._fd)
        # The limit only sets flow control here (read(n) has no line limit).
        stream = asyncio.StreamReader(limit=limit)
        pipe = open(self._fd, "rb", buffering=0, closefd=False)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
        self._stream = stream
        self._transport = transport

    def close(self) -> None:
        """Stop reading and put the descriptor back in its original blocking mode."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if self._was_blocking:
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, True)


def _pollable(fd: int) -> bool:
    """Tell whether the event loop's selector can watch ``fd`` (epoll refuses /dev/null)."""
    import selectors

    selector = selectors.DefaultSelector()
    try:
        selector.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    finally:
        selector.close()
    return True


class ThreadFdSink:
    """Write frames to a descriptor from one daemon thread, coalescing queued frames per write.

    Frames are written whole and in enqueue order; when several are queued they go out in one
    ``os.write`` (up to 256 KiB), which keeps throughput high without ever splitting a frame
    between writers.
    """

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, on_written: Written, on_lost: Lost) -> None:
        """Start the writer thread.

        :param fd: an open writable descriptor, owned by the caller.
        :param loop: the loop that receives the callbacks.
        :param on_written: called on the loop after each write.
        :param on_lost: called on the loop once, when the output fails.
        """
        self._fd = fd
        self._loop = loop
        self._on_written = on_written
        self._on_lost = on_lost
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name=f"hermes-rpc-writer-{fd}", daemon=True)
        self._thread.start()

    def put(self, frame: bytes) -> None:
        """Queue one frame (thread-safe, never blocks).

        :param frame: the encoded frame.
        """
        self._queue.put(frame)

    async def stop(self, timeout: float) -> None:
        """Let the thread finish what is queued, then end it.

        :param timeout: how long to wait for the thread, in seconds.
        """
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join, timeout)

    def _main(self) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        while True:
            frame = get()
            if frame is None:
                return
            batch = [frame]
            size = len(frame)
            stop = False
            while size < _BATCH_BYTES:
                try:
                    more = get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
                size += len(more)
            try:
                self._write_all(frame if len(batch) == 1 else b"".join(batch))
            except OSError as exc:
                self._call(self._on_lost, exc)
                return
            self._call(self._on_written, len(batch), size)
            if stop:
                return

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        fd = self._fd
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                # The descriptor may share a non-blocking open file with the reader (a terminal
                # or socket on both stdin and stdout): wait until it can take more.
                _wait_writable(fd)
                continue
            view = view[written:]

    def _call(self, callback: Callable[..., None], *args: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody to tell
            self._loop.call_soon_threadsafe(callback, *args)


def _wait_writable(fd: int) -> None:
    if hasattr(select, "poll"):  # select() cannot watch descriptors past FD_SETSIZE
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.poll()
    else:  # pragma: no cover - Windows
        select.select([], [fd], [])


class StreamSink:
    """Write frames to an asyncio ``StreamWriter``-like object from one task, in FIFO order."""

    def __init__(self, writer: FrameWriter, on_written: Written, on_lost: Lost) -> None:
        """Start the writer task on the running loop.

        :param writer: the stream to write to, owned by the caller.
        :param on_written: called after each drained write.
        :param on_lost: called once when writing fails.
        """
        self._writer = writer
        self._on_written = on_written
        self._on_lost = on_lost
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._main())

    def put(self, frame: bytes) -> None:
        """Queue one frame (never blocks).

        :param frame: the encoded frame.
        """
        self._queue.put_nowait(frame)

    async def stop(self, timeout: float) -> None:
        """Write what is queued, then end the task (cancelled after ``timeout`` seconds).

        :param timeout: how long to wait, in seconds.
        """
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            self._task.cancel()

    async def _main(self) -> None:
        q = self._queue
        while True:
            frame = await q.get()
            if frame is None:
                return
            batch = [frame]
            size = len(frame)
            stop = False
            while size < _BATCH_BYTES and not q.empty():
                more = q.get_nowait()
                if more is None:
                    stop = True
                    break
                batch.append(more)
                size += len(more)
            try:
                self._writer.write(frame if len(batch) == 1 else b"".join(batch))
                await self._writer.drain()
            except (OSError, RuntimeError) as exc:  # RuntimeError: writing to a closed transport
                self._on_lost(exc)
                return
            self._on_written(len(batch), size)
            if stop:
                return
