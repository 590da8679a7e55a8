"""A model call opened before the turn is ready to read it (the first call of a turn).

The turn loop opens its first call while the user row is still being written
(docs/reference/core.md#the-turn-loop): the request goes out at once and its first chunk is awaited in a task
of its own, but nothing of it is read by the turn until the row is stored and ``TurnStarted`` is out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.providers import ChatRequest


class HeadStart:
    """A model call opened early: its first chunk is being awaited in a task of its own.

    :param provider: the provider making the call.
    :param request: what was sent.
    :param gate: what must succeed before the request is sent (the call's budget reservation);
        its exception is :meth:`cleared`'s, and then nothing was sent.
    """

    def __init__(self, provider: Any, request: ChatRequest, gate: Awaitable[None] | None = None) -> None:
        self.provider = provider
        self.request = request
        self._stream: AsyncIterator[Any] | None = None
        self._gate: asyncio.Future[None] | None = None if gate is None else asyncio.ensure_future(gate)
        self._first: asyncio.Future[Any] = asyncio.ensure_future(self._open())

    async def _open(self) -> Any:
        if self._gate is not None:
            await asyncio.shield(self._gate)
        self._stream = aiter(self.provider.stream(self.request))
        return await _first_chunk(self._stream)

    async def cleared(self) -> None:
        """Wait for the gate: return once the request may go (or went) out; raise the gate's
        refusal otherwise."""
        if self._gate is not None:
            await asyncio.shield(self._gate)

    async def chunks(self) -> AsyncIterator[Any]:
        """Yield the call's chunks: the awaited first one, then the rest of the stream."""
        first = await self._first
        if first is _NO_CHUNK:
            return
        yield first
        assert self._stream is not None
        async for chunk in self._stream:
            yield chunk

    async def discard(self) -> None:
        """Abandon the call: stop the pending read and close the stream."""
        self._first.cancel()
        with contextlib.suppress(BaseException):
            await self._first
        if self._gate is not None:
            self._gate.cancel()
            with contextlib.suppress(BaseException):
                await self._gate
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
