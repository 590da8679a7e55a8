"""``forward``: a method of a session part offered on :class:`~hermes_core.session.Session` itself.

A session is made of parts that own their fields (the stored state, the queue, the controls, the
transcript). Its public API stays one object: ``Session.submit`` is ``forward("queue",
SessionQueue.submit)``, which calls ``session.queue.submit`` with the same typed signature and
docstring, so the methods are not written twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

__all__ = ["forward"]


class forward(Generic[T, P, R]):
    """A descriptor: ``obj.<name>`` is ``fn`` bound to ``obj.<part>``; on the class, ``fn`` itself."""

    __slots__ = ("fn", "part")

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.fn.__doc__

    def __init__(self, part: str, fn: Callable[Concatenate[T, P], R]) -> None:
        self.part = part
        self.fn = fn

    @overload
    def __get__(self, obj: None, owner: type) -> Callable[Concatenate[T, P], R]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, R]: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self.fn
        part = getattr(obj, self.part)
        return self.fn.__get__(part, type(part))
