"""A server-sent-events writer with awaited, time-bounded writes
(docs/reference/api-server.md#sse-streams)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
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

    async def _write(self, text: str) -> None:
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
