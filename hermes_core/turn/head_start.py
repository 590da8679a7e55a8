"""A model call opened before the turn is ready to read it (the first call of a turn).

The turn loop opens its first call while the user row is still being written
(docs/reference/core.md#the-turn-loop): the request goes out at once and its first chunk is awaited in a task
of its own, but nothing of it is read by the turn until the row is stored and ``TurnStarted`` is out.

:attr:`HeadStart.issued` says when the request has gone as far as it can without waiting. That is
later than the provider's call returning to its caller: on Python 3.11, aiohttp's client holds
the request's head back and writes it with the body from a task of its own, one loop pass later.
A row write queued before that pass ran first (0.3-0.5 ms of SQLite work on the loop at c=1), and
the request left after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any

from hermes_core.outlive import retrieve
from hermes_core.turn.first_wait import before_first_wait

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
        self._gate = gate
        # The gate is awaited by the task that then sends the request, not by a task of its own:
        # its answer (a round trip to the budget ledger) wakes the send directly, one step of the
        # loop sooner on the way to the first token.
        self._cleared: asyncio.Future[None] | None = None
        if gate is not None:
            self._cleared = asyncio.get_running_loop().create_future()
            self._cleared.add_done_callback(retrieve)  # nobody asks when the turn ends first
        #: Done once the call has first had to wait (for the network, or for the gate), or has
        #: ended: whatever the loop runs from the next pass on runs after the request's write.
        self.issued: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._first: asyncio.Future[Any] = asyncio.ensure_future(self._opened())
        self._first.add_done_callback(self._issue)

    def _issue(self, _: object = None) -> None:
        if not self.issued.done():
            self.issued.set_result(None)

    async def _opened(self) -> Any:
        return await before_first_wait(self._open(), self._issue)

    async def _open(self) -> Any:
        if self._gate is not None:
            assert self._cleared is not None
            try:
                await self._gate
            except BaseException as exc:
                if not self._cleared.done():
                    if isinstance(exc, asyncio.CancelledError):
                        self._cleared.cancel()
                    else:
                        self._cleared.set_exception(exc)
                raise
            self._cleared.set_result(None)
        self._stream = aiter(self.provider.stream(self.request))
        return await _first_chunk(self._stream)

    async def cleared(self) -> None:
        """Wait for the gate: return once the request may go (or went) out; raise the gate's
        refusal otherwise."""
        if self._cleared is not None:
            await asyncio.shield(self._cleared)

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
        """Abandon the call: stop the pending read (or the gate still awaited) and close the
        stream."""
        self._first.cancel()
        with contextlib.suppress(BaseException):
            await self._first
        if self._cleared is not None and not self._cleared.done():
            self._cleared.cancel()  # cancelled before the gate was even awaited
        if inspect.iscoroutine(self._gate):
            self._gate.close()  # no-op once it ran; else no "never awaited" warning
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
