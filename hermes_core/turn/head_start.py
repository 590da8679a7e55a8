"""A model call opened before the turn is ready to read it (the first call of a turn).

The turn loop opens its first call while the user row is still being written
(docs/reference/core.md#the-turn-loop): the request goes out at once and its first chunk is awaited in a task
of its own, but nothing of it is read by the turn until the row is stored and ``TurnStarted`` is out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.providers import ChatRequest


class HeadStart:
    """A model call opened early: its first chunk is being awaited in a task of its own.

    :param provider: the provider making the call.
    :param request: what was sent.
    """

    def __init__(self, provider: Any, request: ChatRequest) -> None:
        self.provider = provider
        self.request = request
        self._stream: AsyncIterator[Any] = aiter(provider.stream(request))
        self._first: asyncio.Future[Any] = asyncio.ensure_future(_first_chunk(self._stream))

    async def chunks(self) -> AsyncIterator[Any]:
        """Yield the call's chunks: the awaited first one, then the rest of the stream."""
        first = await self._first
        if first is _NO_CHUNK:
            return
        yield first
        async for chunk in self._stream:
            yield chunk

    async def discard(self) -> None:
        """Abandon the call: stop the pending read and close the stream."""
        self._first.cancel()
        with contextlib.suppress(BaseException):
            await self._first
        closer = getattr(self._stream, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()


_NO_CHUNK = object()


async def _first_chunk(stream: AsyncIterator[Any]) -> Any:
    try:
        return await anext(stream)
    except StopAsyncIteration:
        return _NO_CHUNK
