"""Read a server-sent-events body incrementally, failing when the upstream goes silent.

Lines are split here rather than with ``StreamReader.readline`` so one very long ``data:`` line
(a whole tool call sent at once) is never rejected, and every read has its own stall timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_openai.failures import StreamStalled

if TYPE_CHECKING:
    from aiohttp import StreamReader


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its ``event:`` name (``message`` by default) and joined data."""

    event: str
    data: str


async def iter_lines(content: StreamReader, stall_timeout: float) -> AsyncIterator[str]:
    """Yield decoded lines of ``content`` without their line endings.

    :param content: the response body stream.
    :param stall_timeout: seconds one read may wait before :class:`StreamStalled` is raised.
    """
    buffer = bytearray()
    while True:
        try:
            async with asyncio.timeout(stall_timeout):
                data = await content.readany()
        except TimeoutError:
            raise StreamStalled() from None
        if not data:
            break
        buffer.extend(data)
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = bytes(buffer[start:end])
            start = end + 1
            yield line.rstrip(b"\r").decode("utf-8", errors="replace")
        del buffer[:start]
    if buffer:
        yield bytes(buffer).rstrip(b"\r").decode("utf-8", errors="replace")


async def iter_events(content: StreamReader, stall_timeout: float) -> AsyncIterator[SseEvent]:
    """Yield the events of an SSE body; an event is dispatched at each blank line or at EOF.

    :param content: the response body stream.
    :param stall_timeout: seconds one read may wait before :class:`StreamStalled` is raised.
    """
    name = ""
    data: list[str] = []
    async for line in iter_lines(content, stall_timeout):
        if not line:
            if data:
                yield SseEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue  # a comment, used by servers as keep-alive
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if data:
        yield SseEvent(name or "message", "\n".join(data))
