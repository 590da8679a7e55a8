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
