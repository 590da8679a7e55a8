"""A server-sent-events writer with awaited, time-bounded writes (§3.6)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from hermes_api_server.errors import dumps

WRITE_STALL_S = 30.0


class ClientGone(Exception):
    """The client disconnected, or a write stalled."""


class SseWriter:
    """Prepare an SSE response and write frames to it."""

    def __init__(self, request: web.Request, headers: Mapping[str, str] | None = None) -> None:
        self.request = request
        self.response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                **dict(headers or {}),
            },
        )

    async def open(self) -> None:
        """Send the headers."""
        await self.response.prepare(self.request)

    async def raw(self, text: str) -> None:
        """Write text as is; a failure or a 30 s stall raises :class:`ClientGone`."""
        try:
            await asyncio.wait_for(self.response.write(text.encode("utf-8")), WRITE_STALL_S)
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
