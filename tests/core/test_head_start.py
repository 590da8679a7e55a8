"""The first model call opened early behind its gate (the budget reservation,
docs/reference/budgets.md#in-a-turn): the request leaves as soon as the gate answers, never
before, and a refused or abandoned gate sends nothing."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hermes_core.errors import BudgetExceeded
from hermes_core.providers import TextChunk
from hermes_core.turn.head_start import HeadStart
from tests.core.deferred_send import send_from_own_task


class Upstream:
    """A provider whose ``stream`` notes when the request is sent."""

    def __init__(self) -> None:
        self.sent = 0

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        self.sent += 1
        yield TextChunk("hi")


async def test_the_request_leaves_in_the_step_the_gate_answers() -> None:
    answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def gate() -> None:
        await answer  # the reservation's round trip

    upstream = Upstream()
    head = HeadStart(upstream, request=None, gate=gate())  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)
    assert upstream.sent == 0  # nothing goes out before the gate answers
    answer.set_result(None)
    await asyncio.sleep(0)
    # The answer woke the task that sends: no steps of a gate task of its own in between.
    assert upstream.sent == 1
    await head.cleared()
    assert [chunk async for chunk in head.chunks()] == [TextChunk("hi")]


async def test_a_refused_gate_sends_nothing_and_cleared_says_why() -> None:
    async def gate() -> None:
        raise BudgetExceeded("over", bucket="key:k", limit="spend_usd", retry_after=1.0)

    upstream = Upstream()
    head = HeadStart(upstream, request=None, gate=gate())  # type: ignore[arg-type]
    with pytest.raises(BudgetExceeded):
        await head.cleared()
    await head.discard()
    assert upstream.sent == 0


async def test_a_call_abandoned_before_its_gate_ran_sends_nothing_and_warns_nothing() -> None:
    upstream = Upstream()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would be one
        head = HeadStart(upstream, request=None, gate=asyncio.sleep(0))  # type: ignore[arg-type]
        await head.discard()
        with pytest.raises(asyncio.CancelledError):
            await head.cleared()
    assert upstream.sent == 0


class DeferredSend:
    """A provider whose request leaves from a task of its own, one loop pass after ``stream``
    was called (aiohttp's client writes a request that way on Python 3.11)."""

    def __init__(self, fail: bool = False) -> None:
        self.log: list[str] = []
        self.fail = fail

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        await send_from_own_task(self.log, "sent")
        if self.fail:
            raise RuntimeError("upstream refused")
        yield TextChunk("hi")


async def test_issued_comes_once_the_request_has_left_from_the_task_the_client_made() -> None:
    upstream = DeferredSend()
    head = HeadStart(upstream, request=None)  # type: ignore[arg-type]
    await head.issued
    upstream.log.append("issued")
    assert upstream.log == ["sent", "issued"]
    assert [chunk async for chunk in head.chunks()] == [TextChunk("hi")]


async def test_issued_comes_when_the_call_ends_without_waiting_or_fails() -> None:
    at_once = HeadStart(Upstream(), request=None)  # type: ignore[arg-type]
    await at_once.issued
    assert [chunk async for chunk in at_once.chunks()] == [TextChunk("hi")]

    failing = HeadStart(DeferredSend(fail=True), request=None)  # type: ignore[arg-type]
    await failing.issued
    with pytest.raises(RuntimeError, match="upstream refused"):
        [chunk async for chunk in failing.chunks()]


async def test_issued_comes_while_the_gate_waits_so_the_row_write_overlaps_the_reservation() -> None:
    answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def gate() -> None:
        await answer

    upstream = DeferredSend()
    head = HeadStart(upstream, request=None, gate=gate())  # type: ignore[arg-type]
    await head.issued
    assert upstream.log == []  # nothing sent: the reservation is still on its way
    answer.set_result(None)
    assert [chunk async for chunk in head.chunks()] == [TextChunk("hi")]
    assert upstream.log == ["sent"]
