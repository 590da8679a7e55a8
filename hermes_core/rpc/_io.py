"""Byte I/O under the JSON-RPC peer: a chunk reader over a file descriptor and two frame sinks.

The sinks take whole frames in FIFO order and write them without blocking the event loop:
:class:`ThreadFdSink` does blocking writes on one writer thread (copes with pipes, sockets,
terminals and regular files alike, which ``loop.connect_write_pipe`` does not), and
:class:`StreamSink` feeds an asyncio ``StreamWriter``-like object from one writer task.
Both report progress and loss of the output back on the event loop.

Either sink can be armed with a :class:`FrameHook` at any time: every frame queued after the
``arm`` call passes through the hook, in wire order, just before it is written (frames queued
before it are written as they were). A transport uses it once it knows something it did not at
start-up, such as the faults of a scenario (docs/reference/scenarios.md#faults).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import select
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

#: Callback on the loop after frames were written: (frame count, byte count).
Written = Callable[[int, int], None]
#: Callback on the loop once the output is gone (EPIPE, EBADF, reset...).
Lost = Callable[[BaseException], None]

_BATCH_BYTES = 256 * 1024
_log = logging.getLogger("hermes_core.rpc")


class FrameHook(Protocol):
    """Decides, just before it is written, what goes on the wire for one frame.

    Called with each frame queued after the hook was armed, one at a time and in wire order, on
    the writer: the writer thread of a descriptor, or (through ``asyncio.to_thread``) a worker
    thread for a stream. It may block; that holds back this frame and every later one, never the
    event loop. An exception is logged and the frame is written unchanged.
    """

    def __call__(self, frame: bytes) -> Sequence[bytes]:
        """Return the bytes to write in place of ``frame``.

        :param frame: one encoded frame, newline included.
        :returns: ``(frame,)`` to write it, ``()`` to withhold it, ``(frame, frame)`` to write it
            twice; any whole frames.
        """
        ...


@dataclass(frozen=True, slots=True)
class _Arm:
    """Queued by ``arm``: frames behind it go through ``hook``."""

    hook: FrameHook


def _through(hook: FrameHook, frame: bytes) -> bytes:
    """Run one frame through a hook; a failing hook lets the frame through unchanged."""
    try:
        return b"".join(hook(frame))
    except Exception:
        _log.exception("a frame hook failed; the frame is written unchanged")
        return frame


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

    Pipes, sockets and terminals are read with non-blocking ``os.read`` calls, waiting for
    readability through ``loop.add_reader``; a regular file (stdin redirected from a file) or a
    device the selector cannot watch (``/dev/null``) is read with ``os.read`` in the default
    executor, since such reads never wait for a peer.

    The descriptor stays the caller's: it is never handed to a loop transport, because uvloop's
    pipe transports close the descriptor they were given when they close. A reader that closed a
    descriptor its caller then closed again could close whatever file took the number in
    between (a database file, seen as ``disk I/O error``). Its blocking flag is restored on close.
    """

    def __init__(self, fd: int) -> None:
        """Wrap a descriptor; nothing happens until the first read.

        :param fd: an open readable descriptor, owned by the caller.
        """
        self._fd = fd
        self._was_blocking: bool | None = None
        self._regular = False
        self._opened = False
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def read(self, n: int = -1) -> bytes:
        """Return up to ``n`` bytes, ``b""`` at end of input (or once closed).

        :param n: the most bytes wanted.
        :returns: the bytes read.
        :raises OSError: when the descriptor fails (EIO on a vanished terminal, a reset socket).
        """
        size = n if n > 0 else _BATCH_BYTES
        if not self._opened:
            self._open()
        loop = self._loop
        assert loop is not None
        if self._regular:
            return await loop.run_in_executor(None, os.read, self._fd, size)
        while not self._closed:
            try:
                return os.read(self._fd, size)
            except (BlockingIOError, InterruptedError):
                pass
            await self._readable(loop)
        return b""

    async def _readable(self, loop: asyncio.AbstractEventLoop) -> None:
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        loop.add_reader(self._fd, _wake, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if not self._closed:
                loop.remove_reader(self._fd)

    def _open(self) -> None:
        self._opened = True
        self._loop = asyncio.get_running_loop()
        mode = os.fstat(self._fd).st_mode
        if stat.S_ISREG(mode) or not _pollable(self._fd):
            # A file, or a device epoll refuses (``< /dev/null``): reads never wait for a peer.
            self._regular = True
            return
        self._was_blocking = os.get_blocking(self._fd)
        if self._was_blocking:
            os.set_blocking(self._fd, False)

    def close(self) -> None:
        """Stop reading (a pending read returns ``b""``) and restore the blocking mode."""
        if self._closed:
            return
        self._closed = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and self._loop is not None:
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                self._loop.remove_reader(self._fd)
            _wake(waiter)
        if self._was_blocking:
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, True)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


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
        self._queue: queue.SimpleQueue[bytes | _Arm | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name=f"hermes-rpc-writer-{fd}", daemon=True)
        self._thread.start()

    def put(self, frame: bytes) -> None:
        """Queue one frame (thread-safe, never blocks).

        :param frame: the encoded frame.
        """
        self._queue.put(frame)

    def arm(self, hook: FrameHook) -> None:
        """Pass every frame queued from now on through ``hook`` (see :class:`FrameHook`).

        :param hook: the hook; it replaces one armed before.
        """
        self._queue.put(_Arm(hook))

    async def stop(self, timeout: float) -> None:
        """Let the thread finish what is queued, then end it.

        :param timeout: how long to wait for the thread, in seconds.
        """
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join, timeout)

    def _main(self) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        hook: FrameHook | None = None
        item = get()
        while item is not None:
            if isinstance(item, _Arm):
                hook = item.hook
                item = get()
                continue
            if hook is not None:
                # Armed: frame by frame, so a held-back frame never holds back the ones before it.
                if not self._write(_through(hook, item), 1, len(item)):
                    return
                item = get()
                continue
            batch = [item]
            size = len(item)
            after: list[_Arm | None] = []  # the end, or a hook for the frames behind the batch
            while size < _BATCH_BYTES:
                try:
                    more = get_nowait()
                except queue.Empty:
                    break
                if not isinstance(more, bytes):
                    after.append(more)
                    break
                batch.append(more)
                size += len(more)
            if not self._write(item if len(batch) == 1 else b"".join(batch), len(batch), size):
                return
            item = after[0] if after else get()

    def _write(self, data: bytes, frames: int, size: int) -> bool:
        """Write ``data`` (standing for ``frames`` queued frames of ``size`` bytes); report it."""
        try:
            self._write_all(data)
        except OSError as exc:
            self._call(self._on_lost, exc)
            return False
        self._call(self._on_written, frames, size)
        return True

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
        self._queue: asyncio.Queue[bytes | _Arm | None] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._main())

    def put(self, frame: bytes) -> None:
        """Queue one frame (never blocks).

        :param frame: the encoded frame.
        """
        self._queue.put_nowait(frame)

    def arm(self, hook: FrameHook) -> None:
        """Pass every frame queued from now on through ``hook`` (see :class:`FrameHook`).

        :param hook: the hook; it replaces one armed before.
        """
        self._queue.put_nowait(_Arm(hook))

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
        hook: FrameHook | None = None
        item = await q.get()
        while item is not None:
            if isinstance(item, _Arm):
                hook = item.hook
                item = await q.get()
                continue
            if hook is not None:
                data = await asyncio.to_thread(_through, hook, item)
                if not await self._write(data, 1, len(item)):
                    return
                item = await q.get()
                continue
            batch = [item]
            size = len(item)
            after: list[_Arm | None] = []  # the end, or a hook for the frames behind the batch
            while size < _BATCH_BYTES and not q.empty():
                more = q.get_nowait()
                if not isinstance(more, bytes):
                    after.append(more)
                    break
                batch.append(more)
                size += len(more)
            if not await self._write(item if len(batch) == 1 else b"".join(batch), len(batch), size):
                return
            item = after[0] if after else await q.get()

    async def _write(self, data: bytes, frames: int, size: int) -> bool:
        """Write and drain ``data`` (standing for ``frames`` queued frames of ``size`` bytes)."""
        try:
            if data:
                self._writer.write(data)
                await self._writer.drain()
        except (OSError, RuntimeError) as exc:  # RuntimeError: writing to a closed transport
            self._on_lost(exc)
            return False
        self._on_written(frames, size)
        return True
