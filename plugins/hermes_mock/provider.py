"""The mock provider object: streams the deterministic replies of docs/mock-provider.md with no network."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hermes_core import (
    ChatRequest,
    Chunk,
    FinishChunk,
    ModelInfo,
    ProviderBase,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes_mock.replies import CONTEXT_WINDOW, MODELS, plan_reply

# Without a delay the deltas stream back to back; every this many the stream yields to the event
# loop so that an interrupt can cancel even a 100,000-token reply promptly.
_YIELD_EVERY = 4096


class MockProvider(ProviderBase):
    """Deterministic offline provider; implements :class:`hermes_core.Provider`.

    Its four models (``echo``, ``script``, ``alt``, ``history``) are the same offline and probed.
    """

    models = tuple(ModelInfo(id=model, context_window=CONTEXT_WINDOW, vision=False) for model in MODELS)

    def __init__(self, name: str = "mock") -> None:
        """Create the provider.

        :param name: the provider name it was registered under.
        """
        self.name = name

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream the reply to one request.

        :param request: the model call.
        :returns: reasoning deltas, then tool calls or text deltas, then usage and the finish.
        :raises ProviderError: ``upstream`` (not retryable) for an unknown model or an
            ``[[error MESSAGE]]`` directive, before any chunk.
        """
        plan = plan_reply(request)
        delay = plan.delay_ms / 1000
        for text in plan.reasoning:
            if delay:
                await asyncio.sleep(delay)
            yield ReasoningChunk(text)
        for call in plan.calls:
            yield ToolCallChunk(call)
        if delay:
            for text in plan.deltas:
                await asyncio.sleep(delay)
                yield TextChunk(text)
        else:
            for index, text in enumerate(plan.deltas, 1):
                yield TextChunk(text)
                if not index % _YIELD_EVERY:
                    await asyncio.sleep(0)
        yield UsageChunk(input=plan.input_words, output=len(plan.deltas), reasoning=0)
        yield FinishChunk(plan.finish)
