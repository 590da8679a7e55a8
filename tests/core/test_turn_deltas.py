"""How the turn decides that deltas "arrived together" (docs/reference/core.md#delta-coalescing):
``next_chunk`` flushes just before the stream has to wait, never when the chunk is in hand."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from hermes_core.turn.deltas import next_chunk


async def test_flush_runs_only_when_the_stream_has_to_wait() -> None:
    more = asyncio.Event()
    log: list[str] = []

    async def stream() -> AsyncIterator[str]:
        yield "a"
        yield "b"  # in hand: no wait between a and b
        await more.wait()
        yield "c"

    chunks = aiter(stream())

    def flush() -> None:
        log.append("flush")

    async def read_all() -> None:
        while True:
            try:
                log.append(await next_chunk(chunks, flush))
            except StopAsyncIteration:
                return

    reader = asyncio.ensure_future(read_all())
    while "flush" not in log:
        await asyncio.sleep(0)
    assert log == ["a", "b", "flush"]  # the flush came before the wait, after what was in hand
    more.set()
    await reader
    assert log == ["a", "b", "flush", "c"]  # the end of the stream did not wait


async def test_a_cancelled_wait_was_flushed_first_and_closes_the_stream() -> None:
    flushed = asyncio.Event()
    closed = asyncio.Event()

    async def stream() -> AsyncIterator[str]:
        try:
            yield "a"
            await asyncio.Event().wait()  # never comes
            yield "b"
        finally:
            closed.set()

    chunks = aiter(stream())
    assert await next_chunk(chunks, flushed.set) == "a" and not flushed.is_set()
    reader = asyncio.ensure_future(next_chunk(chunks, flushed.set))
    await flushed.wait()
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert closed.is_set()  # the cancellation reached the stream's own wait
