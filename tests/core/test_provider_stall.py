"""One stall timer for every read of a streamed body (``provider_kit.stall.StallWatch``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from hermes_core import provider_kit
from hermes_core.provider_kit.stall import StallWatch
from tests.timing import scaled


class Slow:
    """A body whose every read waits ``delay`` seconds, then hands out ``b"x"`` (forever)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.reads = 0

    async def readany(self) -> bytes:
        await asyncio.sleep(self.delay)
        self.reads += 1
        return b"data: x\n\n"


class Stalled(Exception):
    pass


async def test_each_read_has_the_whole_timeout_though_together_they_take_longer() -> None:
    watch = StallWatch(0.2, Stalled)
    body = Slow(0.05)
    started = time.monotonic()
    try:
        for _ in range(12):  # 0.6 s in all, three times the timeout
            assert await watch.read(body) == b"data: x\n\n"
    finally:
        watch.close()
    assert body.reads == 12 and time.monotonic() - started >= 0.6


async def test_a_read_that_waits_too_long_raises_the_stall_error() -> None:
    watch = StallWatch(0.1, Stalled)
    started = time.monotonic()
    with pytest.raises(Stalled):
        await watch.read(Slow(30))
    assert time.monotonic() - started < scaled(2)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the watch's cancel is taken back


async def test_time_between_reads_is_not_counted_and_never_cancelled() -> None:
    watch = StallWatch(0.1, Stalled)
    try:
        await watch.read(Slow(0))
        await asyncio.sleep(0.35)  # the caller's own work: the timer fires meanwhile, harmlessly
        assert await watch.read(Slow(0.05)) == b"data: x\n\n"
    finally:
        watch.close()


async def test_a_cancel_from_outside_stays_a_cancel() -> None:
    watch = StallWatch(5, Stalled)
    reader = asyncio.ensure_future(watch.read(Slow(30)))
    await asyncio.sleep(0.05)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    watch.close()


async def test_an_sse_body_that_goes_silent_mid_stream_raises_stream_stalled() -> None:
    class Then:
        def __init__(self) -> None:
            self.n = 0

        async def readany(self) -> bytes:
            self.n += 1
            if self.n > 3:
                await asyncio.sleep(30)  # silent from the fourth read on
            await asyncio.sleep(0.08)
            return b"data: x\n\n"

    seen = 0
    with pytest.raises(provider_kit.StreamStalled):
        async for _ in provider_kit.iter_events(Then(), 0.15):
            seen += 1
    assert seen == 3
