"""How the mock streams: delta cutting, tokens, delay, reasoning, errors, finish reasons and usage."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from mock_helpers import Collect, assistant, tool, user

from hermes_core import ChatMessage, ChatRequest, ProviderError, TextChunk, ToolCallRequest
from hermes_mock.plugin import make_provider
from tests.timing import TIME_SCALE, scaled


async def test_deltas_attach_whitespace_to_the_following_word(collect: Collect) -> None:
    reply = await collect("alpha  beta\tgamma\n\ndelta")
    assert reply.deltas == ["You", " said:", " alpha", "  beta", "\tgamma", "\n\ndelta"]
    assert reply.text == "You said: alpha  beta\tgamma\n\ndelta"


async def test_trailing_whitespace_is_kept(collect: Collect) -> None:
    reply = await collect("end with space ")
    assert reply.text == "You said: end with space "
    assert reply.deltas[-1] == " "


async def test_line_and_paragraph_separators_survive_the_cut(collect: Collect) -> None:
    typed = "one\u2028two\u2029three"
    reply = await collect(typed)
    assert reply.text == "You said: " + typed
    assert reply.deltas == ["You", " said:", " one", "\u2028two", "\u2029three"]


async def test_tokens_stream_exact_deltas(collect: Collect) -> None:
    reply = await collect("[[tokens 5]]")
    assert reply.deltas == ["t0", " t1", " t2", " t3", " t4"]
    assert reply.usage.output == 5


async def test_tokens_replace_the_echo_wherever_the_directive_stands(collect: Collect) -> None:
    reply = await collect("count for me [[tokens 2]] please")
    assert reply.text == "t0 t1"


async def test_long_token_stream_is_fast() -> None:
    provider = make_provider({}, name="mock", preset=None)
    request = ChatRequest(model="echo", messages=(user("[[tokens 20000]]"),))
    best = float("inf")
    for _ in range(3):  # best of three, so a busy machine does not make the test flaky
        started = time.perf_counter()
        count = 0
        async for chunk in provider.stream(request):
            count += isinstance(chunk, TextChunk)
        best = min(best, time.perf_counter() - started)
        assert count == 20000
    assert 20000 / best >= 200_000 / TIME_SCALE, f"{20000 / best:.0f} chunks/s"


async def test_delay_sleeps_before_each_delta(collect: Collect) -> None:
    started = time.perf_counter()
    reply = await collect("[[delay 50]] [[tokens 3]]")
    elapsed = time.perf_counter() - started
    assert reply.deltas == ["t0", " t1", " t2"]
    assert elapsed >= 0.15


async def test_delay_applies_between_deltas_as_they_arrive() -> None:
    provider = make_provider({}, name="mock", preset=None)
    request = ChatRequest(model="echo", messages=(user("one two [[delay 40]]"),))
    arrivals: list[float] = []
    started = time.perf_counter()
    async for chunk in provider.stream(request):
        if isinstance(chunk, TextChunk):
            arrivals.append(time.perf_counter() - started)
    assert len(arrivals) == 4  # "You", " said:", " one", " two"
    assert arrivals[0] >= 0.04
    assert all(b - a >= 0.035 for a, b in itertools.pairwise(arrivals))


async def test_no_delay_means_no_sleep(collect: Collect) -> None:
    started = time.perf_counter()
    await collect("[[tokens 50000]]")
    assert time.perf_counter() - started < scaled(1.0)


async def test_interrupt_cancels_a_delayed_stream_promptly() -> None:
    provider = make_provider({}, name="mock", preset=None)
    request = ChatRequest(model="echo", messages=(user("[[delay 60000]] slow"),))
    received: list[str] = []

    async def consume() -> None:
        async for chunk in provider.stream(request):
            received.append(type(chunk).__name__)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < scaled(0.5)
    assert received == []


async def test_reason_streams_reasoning_before_the_answer(collect: Collect) -> None:
    reply = await collect("what now [[reason let me think\nabout it]]")
    assert reply.reasoning == ["let", " me", " think", "\nabout", " it"]
    assert reply.text == "You said: what now"
    kinds = [type(c).__name__ for c in reply.chunks]
    assert kinds.index("TextChunk") > max(i for i, k in enumerate(kinds) if k == "ReasoningChunk")
    assert reply.usage.reasoning == 0
    assert reply.usage.output == 4  # reasoning deltas are not counted


async def test_error_fails_before_any_chunk(collect: Collect) -> None:
    provider = make_provider({}, name="mock", preset=None)
    request = ChatRequest(model="echo", messages=(user("hi [[reason r]] [[error quota exhausted]]"),))
    received = []
    with pytest.raises(ProviderError) as caught:
        async for chunk in provider.stream(request):
            received.append(chunk)
    assert received == []
    assert caught.value.kind == "upstream"
    assert caught.value.retryable is False
    assert caught.value.message == "quota exhausted"
    assert str(caught.value) == "quota exhausted"


async def test_last_error_wins(collect: Collect) -> None:
    with pytest.raises(ProviderError) as caught:
        await collect("[[error first]] [[error second one]]")
    assert caught.value.message == "second one"


@pytest.mark.parametrize("reason", ["length", "refusal"])
async def test_finish_directive_sets_the_finish_reason(collect: Collect, reason: str) -> None:
    reply = await collect(f"write a lot [[finish {reason}]]")
    assert reply.text == "You said: write a lot"
    assert reply.finish == reason


async def test_last_finish_wins(collect: Collect) -> None:
    assert (await collect("[[finish length]] x [[finish refusal]]")).finish == "refusal"
    assert (await collect("[[finish refusal]] x [[finish length]]")).finish == "length"


async def test_usage_counts_words_of_user_assistant_and_tool_messages(collect: Collect) -> None:
    call = ToolCallRequest("c1", "terminal", '{"command": "a b c d e f"}')
    history = [
        user("one two [[tool terminal {}]]"),  # 5 words as typed, directive included
        assistant("", [call]),  # 0 words: arguments are not text
        tool("c1", "three four\nfive"),  # 3 words
        assistant("six seven"),  # 2 words
        user("eight  nine\tten"),  # 3 words
    ]
    history.insert(0, ChatMessage(role="system", content="ignored system words here"))
    reply = await collect(history)
    assert reply.text == "You said: eight  nine\tten"
    assert (reply.usage.input, reply.usage.output, reply.usage.reasoning) == (13, 5, 0)


async def test_usage_comes_once_then_the_finish(collect: Collect) -> None:
    reply = await collect("[[tokens 3]]")
    names = [type(c).__name__ for c in reply.chunks]
    assert names == ["TextChunk", "TextChunk", "TextChunk", "UsageChunk", "FinishChunk"]


async def test_the_same_request_always_streams_the_same_chunks(collect: Collect) -> None:
    typed = 'a [[reason r]] [[tool t {"k": 1}]] [[finish length]]'
    assert (await collect(typed)).chunks == (await collect(typed)).chunks
