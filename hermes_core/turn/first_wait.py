"""Await something and learn the moment it first has to wait for the event loop.

Two places in the turn act at that moment: the delta coalescer emits what it holds once the
provider's stream has to wait for the network (:mod:`hermes_core.turn.deltas`), and the first
model call of a turn tells the turn that its request has been handed to the network, so the
user row's write may take the loop (:mod:`hermes_core.turn.head_start`).
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

T = TypeVar("T")


@types.coroutine
def before_first_wait(awaitable: Awaitable[T], before: Callable[[], None]) -> Generator[Any, Any, T]:
    """Await ``awaitable``, calling ``before`` once, just before it first suspends.

    A generator-based coroutine that drives ``awaitable`` itself, so it sees the first time it
    yields to the event loop. ``before`` is not called when ``awaitable`` finishes (or fails)
    without suspending; when ``before`` raises, ``awaitable`` is closed and the error raised.
    """
    inner = awaitable.__await__()
    try:
        signal = inner.send(None)
    except StopIteration as done:  # finished without waiting
        return done.value  # type: ignore[no-any-return]
    try:
        before()
    except BaseException:
        inner.close()  # not left half-awaited
        raise
    while True:
        try:
            sent = yield signal
        except GeneratorExit:
            inner.close()
            raise
        except BaseException as exc:  # e.g. a cancellation, thrown into the wait
            try:
                signal = inner.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                signal = inner.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
