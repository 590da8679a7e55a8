"""Fixtures for the mock provider tests: stream one request through a fresh provider."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from mock_helpers import Collect, Reply, user

from hermes_core import ChatMessage, ChatRequest
from hermes_mock.plugin import make_provider


@pytest.fixture
def collect() -> Collect:
    """Return an async function that streams one request through a fresh mock provider."""
    provider = make_provider({}, name="mock", preset=None)

    async def run(
        messages: Sequence[ChatMessage] | str,
        model: str = "echo",
        purpose: str = "turn",
    ) -> Reply:
        if isinstance(messages, str):
            messages = [user(messages)]
        request = ChatRequest(model=model, messages=tuple(messages), purpose=purpose)  # type: ignore[arg-type]
        reply = Reply()
        async for chunk in provider.stream(request):
            reply.chunks.append(chunk)
        return reply

    return run
