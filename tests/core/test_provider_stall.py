"""One stall timer for every read of a streamed body (``provider_kit.stall.StallWatch``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from hermes_core import provider_kit
from hermes_core.provider_kit.stall import StallWatch
from tests.timing import scaled


class Body:
    """A body whose reads each wait ``delays[i]`` seconds (the last forever), then hand out one
    event; ``set_exception`` fails the pending read and every later one, as aiohttp's does."""

    def __init__(self, *delays: float) -> None:
        self.delays = list(delays)
        self.reads = 0
        self.failed: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    def set_exception(self, exc: BaseException) -> None:
        self.failed = exc
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)

    async def readany(self) -> bytes:
        if self.failed is not None:
            raise self.failed
        delay = self.delays.pop(0) if len(self.delays) > 1 else self.delays[0]
        self._waiter = asyncio.get_running_loop().create_future()
        timer = asyncio.get_running_loop().call_later(delay, self._waiter.set_result, None)
        try:
            await self._waiter
        finally:
            timer.cancel()
        self.reads += 1
        return b"data: x\n\n"


async def read(watch: StallWatch, body: Body) -> bytes:
    watch.start()
    try:
        return await body.readany()
    finally:
        watch.reading = False


async def test_each_read_has_the_whole_timeout_though_together_they_take_longer() -> None:
    body = Body(0.05)
    watch = StallWatch(0.2, body, provider_kit.StreamStalled)
    started = time.monotonic()
    try:
        for _ in range(12):  # 0.6 s in all, three times the timeout
            assert await read(watch, body) == b"data: x\n\n"
    finally:
        watch.close()
    assert body.reads == 12 and time.monotonic() - started >= 0.6


async def test_a_read_that_waits_too_long_raises_the_stall_error() -> None:
    body = Body(0.01, 30)
    watch = StallWatch(0.1, body, provider_kit.StreamStalled)
    started = time.monotonic()
    await read(watch, body)
    with pytest.raises(provider_kit.StreamStalled):
        await read(watch, body)
    assert time.monotonic() - started < scaled(2)
    watch.close()


async def test_time_between_reads_is_not_counted() -> None:
    body = Body(0.0, 0.05)
    watch = StallWatch(0.1, body, provider_kit.StreamStalled)
    try:
        await read(watch, body)
        await asyncio.sleep(0.35)  # the caller's own work: the timer fires meanwhile, harmlessly
        assert await read(watch, body) == b"data: x\n\n"
    finally:
        watch.close()
    assert body.failed is None


async def test_an_sse_body_that_goes_silent_mid_stream_raises_stream_stalled() -> None:
    seen = 0
    started = time.monotonic()
    with pytest.raises(provider_kit.StreamStalled):
        async for _ in provider_kit.iter_events(Body(0.08, 0.08, 0.08, 30), 0.15):
            seen += 1
    assert seen == 3
    assert time.monotonic() - started < scaled(3)


async def test_an_sse_body_slower_in_all_than_the_timeout_is_read_whole() -> None:
    body = Body(*[0.04] * 10, 0.04)
    seen = 0
    async for _ in provider_kit.iter_events(body, 0.15):
        seen += 1
        if seen == 12:  # 0.48 s, over three times the timeout
            break
    assert body.failed is None
