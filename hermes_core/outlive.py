"""Waiting for a future that must outlive its waiter (cancelled, or out of time), a loop pass
cheaper than ``asyncio.shield`` (issue #30).

``await asyncio.shield(fut)`` wakes its task two loop passes after ``fut`` is done: ``fut``'s
callback completes the shield's outer future, whose own callback then wakes the task, each a pass
of its own. The turn path awaits several such writes (every row, the writer lease), each in the way
of the first token. :func:`outlive` hands the waiting task ``fut`` itself to wait on, so it wakes
one pass after ``fut`` is done, while a cancel of the waiting task still leaves ``fut`` alone:
the task gets its ``CancelledError`` once ``fut`` is done (``shield`` raises it at once, and ``fut``
goes on unwatched). Use it where a cancelled caller waits for the work anyway.

:func:`within` waits for such a future up to a timeout instead, for a caller that gives up on it
after a while but must not stop it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

__all__ = ["outlive", "retrieve", "within"]

T = TypeVar("T")


def retrieve(future: asyncio.Future[Any]) -> None:
    """Consume a finished future's outcome so that asyncio never reports it as unretrieved (a
    done callback for work whose failure is reported some other way, or not needed)."""
    if not future.cancelled():
        future.exception()


class _Outliving(Generic[T]):
    """What the waiting task sees as the future it waits on (asyncio's protocol for futures of
    other kinds: ``_asyncio_future_blocking``, ``get_loop``, ``add_done_callback`` and
    ``cancel``): ``fut`` itself, except that a cancel does not reach it. Refused, the task's
    cancel is kept and raised in it when ``fut`` wakes it."""

    __slots__ = ("_asyncio_future_blocking", "_fut")

    def __init__(self, fut: asyncio.Future[T]) -> None:
        self._fut = fut
        self._asyncio_future_blocking = False

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._fut.get_loop()

    def add_done_callback(self, fn: Callable[[Any], object], *, context: Any = None) -> None:
        self._fut.add_done_callback(fn, context=context)

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        return self._fut.remove_done_callback(fn)

    def cancel(self, msg: Any = None) -> bool:
        return False  # not ``fut``'s cancel: the task raises its CancelledError once ``fut`` is done

    def done(self) -> bool:
        return self._fut.done()

    def __await__(self) -> Generator[Any, None, T]:
        if not self._fut.done():
            self._asyncio_future_blocking = True
            yield self
        return self._fut.result()


def outlive(fut: asyncio.Future[T]) -> _Outliving[T]:
    """Return an awaitable of ``fut``'s result that a cancel of the awaiting task never passes on
    to ``fut``: the cancel is raised in the task once ``fut`` is done."""
    return _Outliving(fut)


async def within(fut: asyncio.Future[Any], timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``fut`` (never cancelling it); tell whether it is done.

    Rather than ``wait_for(shield(fut))``, which wakes the waiter three loop passes after ``fut``
    is done (the shield's two futures, then wait_for's own), where this takes two.
    """
    if fut.done() or timeout <= 0:
        return fut.done()
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    fut.add_done_callback(wake)
    timer = loop.call_later(timeout, wake)
    try:
        await waiter
    finally:
        timer.cancel()
        fut.remove_done_callback(wake)
    return fut.done()
