"""A server-sent-events writer with awaited, time-bounded writes
(docs/reference/api-server.md#sse-streams)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from hermes_api_server.errors import dumps

WRITE_STALL_S = 30.0
_NO_WAIT_BYTES = 16 * 1024  # asyncio pauses writers at 64 KiB by default


class ClientGone(Exception):
    """The client disconnected, or a write stalled."""


class _SseResponse(web.StreamResponse):
    """A stream response whose head leaves with its first write: one packet, not two.

    aiohttp keeps the head buffered until then when this class attribute is False (as its own
    ``Response`` does); an aiohttp without it simply sends the head at once.
    """

    _send_headers_immediately = False


def _frames(text: str) -> list[str]:
    """Split SSE text into its frames, each with its blank-line terminator."""
    parts = text.split("\n\n")
    found = [part + "\n\n" for part in parts[:-1]]
    if parts[-1]:
        found.append(parts[-1])
    return found


class SseWriter:
    """Prepare an SSE response and write frames to it.

    With a scenario's faults (docs/reference/scenarios.md#faults) every ``data:`` frame first
    asks the stream's frame counter what to do with it: drop the connection, delay or duplicate
    the frame, or restart the listener. Comments (keep-alives) are not counted.
    """

    def __init__(self, request: web.Request, headers: Mapping[str, str] | None = None) -> None:
        from hermes_api_server.state import get_state
        from hermes_core import scenarios

        self.request = request
        state = get_state(request)
        settings = state.kernel.settings
        self._faults = None
        if settings.model and settings.model.startswith(scenarios.SCENARIO_PREFIX):
            # The data dir keeps how often each fault fired, so a restarted process goes on.
            configured = settings.data_dir
            home = Path(configured) if configured is not None else None
            self._faults = scenarios.frame_faults(settings.model, "api", data_dir=home)
        self._restart = state.restart_listener
        self._draining: asyncio.Future[None] | None = None
        self.response = _SseResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                **dict(headers or {}),
            },
        )

    @property
    def can_write_now(self) -> bool:
        """Whether :meth:`write_now` may write at all (not with frame faults, which count
        frames as they go through :meth:`raw`)."""
        return self._faults is None

    @property
    def opened(self) -> bool:
        """Whether the head has been prepared (sent, or leaving with the next write)."""
        return self.response.prepared

    async def open(self, first: str = "") -> None:
        """Send the headers, with ``first`` (frames) in the same packet when given.

        :raises ClientGone: when the client is already gone.
        """
        try:
            await self.response.prepare(self.request)
        except (ConnectionError, RuntimeError) as exc:
            raise ClientGone(str(exc)) from exc
        # An empty write sends the buffered head on its own.
        await self.raw(first)

    async def raw(self, text: str) -> None:
        """Write text as is; a failure or a 30 s stall raises :class:`ClientGone`."""
        if self._faults is None or not text:
            await self._write(text)
            return
        for frame in _frames(text):
            fault = self._faults.next_frame() if "data:" in frame else None
            if fault is None:
                await self._write(frame)
            elif fault.action == "delay":
                await asyncio.sleep(fault.delay_ms / 1000)
                await self._write(frame)
            elif fault.action == "duplicate":
                await self._write(frame + frame)
            else:  # drop or restart: the connection goes, without this frame
                transport = self.request.transport
                if transport is not None:
                    transport.abort()
                if fault.action == "restart" and self._restart is not None:
                    self._restart(fault.delay_ms)
                raise ClientGone(f"injected fault: {fault.action}")

    def write_now(self, text: str) -> bool:
        """Write ``text`` (frames) at once, from a plain function, when the write cannot wait.

        For the turn's own step (``Turn.set_sink``): True once the bytes are handed to the
        transport; False, with nothing written, when the stream is not open, has frame faults,
        an earlier write is still draining, or the transport is backed up or closing (the caller
        then writes them with :meth:`raw`, which waits, or reports the client gone).
        """
        if self._faults is not None or self._draining is not None or not self.response.prepared:
            return False
        transport = self.request.transport
        data = text.encode("utf-8")
        if (
            transport is None
            or transport.is_closing()
            or transport.get_write_buffer_size() + len(data) >= _NO_WAIT_BYTES
        ):
            return False
        write = self.response.write(data)
        try:
            waits_on = write.send(None)
        except StopIteration:
            return True
        except (ConnectionError, RuntimeError):
            return False  # raised before any byte was written: raw() reports it
        # Far below the high-water mark the write never waits; should it (the bytes are in the
        # transport already), it is finished by a task that the next write waits for.
        self._draining = asyncio.ensure_future(_finish(write, waits_on))
        return True

    async def _drained(self) -> None:
        """Wait for the write that :meth:`write_now` left draining, if any."""
        draining, self._draining = self._draining, None
        if draining is not None:
            try:
                async with asyncio.timeout(WRITE_STALL_S):
                    await draining
            except (ConnectionError, TimeoutError, RuntimeError) as exc:
                raise ClientGone(str(exc)) from exc

    async def _write(self, text: str) -> None:
        if self._draining is not None:
            await self._drained()
        data = text.encode("utf-8")
        try:
            transport = self.request.transport
            if transport is not None and transport.get_write_buffer_size() + len(data) < _NO_WAIT_BYTES:
                # Far below the transport's high-water mark: the write cannot wait, so it needs
                # no stall timer (one per frame adds up over hundreds of streams).
                await self.response.write(data)
                return
            async with asyncio.timeout(WRITE_STALL_S):
                await self.response.write(data)
        except (ConnectionError, TimeoutError, RuntimeError) as exc:
            raise ClientGone(str(exc)) from exc

    async def finish(self, text: str) -> None:
        """Write the last frames and end the body in one packet (opening the stream if needed).

        :raises ClientGone: on a failed or stalled write.
        """
        if self._faults is not None and text:
            if not self.response.prepared:
                await self.open()
            await self.raw(text)
            text = ""
        if self._draining is not None:
            await self._drained()  # the end follows what write_now left
        try:
            if not self.response.prepared:
                await self.response.prepare(self.request)
            async with asyncio.timeout(WRITE_STALL_S):
                await self.response.write_eof(text.encode("utf-8"))
        except (ConnectionError, TimeoutError, RuntimeError) as exc:
            raise ClientGone(str(exc)) from exc

    async def data(self, payload: Any, *, event: str | None = None, event_id: int | None = None) -> None:
        """Write one frame: optional ``event:`` and ``id:`` lines, then compact JSON."""
        head = ""
        if event is not None:
            head += f"event: {event}\n"
        if event_id is not None:
            head += f"id: {event_id}\n"
        await self.raw(head + "data: " + dumps(payload) + "\n\n")


class _Suspended:
    """Awaiting it waits on what a coroutine yielded when it suspended (as its task would)."""

    __slots__ = ("waits_on",)

    def __init__(self, waits_on: Any) -> None:
        self.waits_on = waits_on

    def __await__(self) -> Generator[Any, None, None]:
        yield self.waits_on


async def _finish(coro: Coroutine[Any, Any, None], waits_on: Any) -> None:
    """Run a coroutine that suspended on ``waits_on`` (driven by hand so far) to its end."""
    while True:
        try:
            await _Suspended(waits_on)
        except BaseException as exc:  # this task cancelled: the coroutine gets it
            try:
                waits_on = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waits_on = coro.send(None)
            except StopIteration:
                return
