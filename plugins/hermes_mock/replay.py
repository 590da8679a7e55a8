"""Replay a recording as the ``mock:replay:DIR`` model (docs/reference/scenarios.md#record-and-replay).

The n-th call of a purpose (turn, title, summary, one-shot) gets the n-th recorded call of that
purpose, chunk for chunk, with the recorded pauses between chunks (times ``time_scale``). A
recorded provider error is raised again. When the recording runs out the call fails with a
non-retryable ``upstream`` error naming the directory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hermes_core import ChatRequest, Chunk, ProviderError, scenarios


class ReplayPlayer:
    """Streams the recorded calls of one directory, in order per purpose."""

    def __init__(self, directory: str, calls: list[scenarios.RecordedCall], time_scale: float = 1.0) -> None:
        self.directory = directory
        self.time_scale = time_scale
        self._queues: dict[str, list[scenarios.RecordedCall]] = {}
        for call in calls:
            self._queues.setdefault(str(call.header.get("purpose", "turn")), []).append(call)
        self._next: dict[str, int] = {}

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        queue = self._queues.get(request.purpose, [])
        index = self._next.get(request.purpose, 0)
        if index >= len(queue):
            raise ProviderError(
                "upstream",
                f"recording {self.directory}: no more {request.purpose} calls (it holds {len(queue)})",
                retryable=False,
            )
        self._next[request.purpose] = index + 1
        call = queue[index]
        previous = 0.0
        for offset, chunk in call.chunks:
            wait = (offset - previous) * self.time_scale / 1000
            previous = offset
            if wait > 0:
                await asyncio.sleep(wait)
            yield chunk
        if call.error is not None:
            raise ProviderError(
                call.error.get("kind", "upstream"),
                str(call.error.get("message", "recorded failure")),
                retryable=bool(call.error.get("retryable", False)),
            )
