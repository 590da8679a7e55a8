"""A reference from a part back to the object that owns it, held weakly.

A session's parts (its queue, controls, transcript…) and a turn's budget reach their owner,
which holds them: a strong reference both ways makes a cycle that only the cyclic garbage
collector frees, so every closed session and finished turn would wait for a collection (and,
under load, survive into the oldest generation). A :class:`BackRef` attribute holds its value
weakly instead: reading it gives the owner while something else keeps the owner alive, and
raises ``ReferenceError`` once it is gone (a part used without its owner is a bug, not a state).
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")

__all__ = ["BackRef"]


class BackRef(Generic[T]):
    """A data descriptor: assign the owner as usual (``self._session = session``); it is kept
    as a weak reference and read back as the owner itself."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._key = f"{name}__weak"
        self._name = f"{owner.__name__}.{name}"

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> BackRef[T]: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> T: ...
    def __get__(self, obj: object | None, objtype: type | None = None) -> T | BackRef[T]:
        if obj is None:
            return self
        target: T | None = obj.__dict__[self._key]()
        if target is None:
            raise ReferenceError(f"{self._name}: its owner is gone")
        return target

    def __set__(self, obj: object, value: T) -> None:
        obj.__dict__[self._key] = weakref.ref(value)

    def peek(self, obj: Any) -> T | None:
        """Return the owner, or None once it is gone."""
        target: T | None = obj.__dict__[self._key]()
        return target
