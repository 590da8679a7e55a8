"""``forward``: a method of a session part offered on :class:`~hermes_core.session.Session` itself.

A session is made of parts that own their fields (the stored state, the queue, the controls, the
transcript). Its public API stays one object: ``Session.submit`` is ``forward("queue",
SessionQueue.submit)``, which calls ``session.queue.submit`` with the same typed signature and
docstring, so the methods are not written twice.

A part holds its session weakly (:class:`~hermes_core.backref.BackRef`), so a coroutine method
reached through the session keeps the session alive until it returns: a caller that drops its
last reference meanwhile (pi replacing its session while a command on the old one still awaits)
gets the method finished on the session it called, not a ``ReferenceError`` halfway through.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

__all__ = ["forward"]


class forward(Generic[T, P, R]):
    """A descriptor: ``obj.<name>`` is ``fn`` bound to ``obj.<part>``; on the class, ``fn`` itself."""

    __slots__ = ("fn", "part", "pins")

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.fn.__doc__

    def __init__(self, part: str, fn: Callable[Concatenate[T, P], R]) -> None:
        self.part = part
        self.fn = fn
        self.pins = inspect.iscoroutinefunction(fn)

    @overload
    def __get__(self, obj: None, owner: type) -> Callable[Concatenate[T, P], R]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, R]: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self.fn
        part = getattr(obj, self.part)
        if self.pins:
            return _PinnedMethod(_pinned, obj, self.fn, part)
        return self.fn.__get__(part, type(part))


class _PinnedMethod(functools.partial[Any]):
    """A coroutine method bound to its part that also holds the part's owner until it returns.

    Read like a bound method (``__self__`` is the part, ``__func__`` the function, the signature
    and docstring are the method's); calling it costs one C-level partial call and one coroutine.
    """

    @property
    def __self__(self) -> object:
        return self.args[2]

    @property
    def __func__(self) -> Callable[..., Any]:
        func: Callable[..., Any] = self.args[1]
        return func

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.args[1].__get__(self.args[2]))

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        doc: str | None = self.args[1].__doc__
        return doc


async def _pinned(owner: object, fn: Callable[..., Any], part: object, /, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(part, ...)`` while this frame holds ``owner`` (positional-only: a method may take
    an ``owner`` keyword of its own, as ``submit`` does)."""
    return await fn(part, *args, **kwargs)
