"""A cheaper ``dataclasses.replace`` for the kernel's plain frozen records (issue #30).

``dataclasses.replace`` walks the class's field objects, checks each one's kind and then runs
the generated ``__init__``, which sets every field of a frozen class through
``object.__setattr__`` again: 15-35 µs for a stored row or a session record, and a turn makes
about ten such copies. :func:`evolve` copies the fields straight into a new instance instead,
through the slots' descriptors, which gives the same object for a slotted dataclass whose fields
are all ``init`` fields and which has no ``__post_init__``; for any other class it calls
``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["evolve"]

T = TypeVar("T")

# A class -> (name, read, write) of each field when a plain copy equals dataclasses.replace
# (slotted fields, all set by __init__, no __post_init__), else None.
_PLAIN: dict[type, tuple[tuple[str, Any, Any], ...] | None] = {}


def _plain_fields(cls: type) -> tuple[tuple[str, Any, Any], ...] | None:
    fields = dataclasses.fields(cls)
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields):
        return None
    out = []
    for f in fields:
        slot = cls.__dict__.get(f.name)
        if slot is None or type(slot).__name__ != "member_descriptor":
            return None  # not a slot of this class itself
        out.append((f.name, slot.__get__, slot.__set__))
    return tuple(out)


def evolve(obj: T, /, **changes: Any) -> T:
    """Return a copy of the dataclass instance ``obj`` with ``changes`` applied, as
    ``dataclasses.replace`` does (an unknown field name raises ``TypeError`` too)."""
    cls = type(obj)
    try:
        fields = _PLAIN[cls]
    except KeyError:
        fields = _PLAIN[cls] = _plain_fields(cls)
    if fields is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    new = object.__new__(cls)
    # The slots' own descriptors: what object.__setattr__ reaches after a lookup per call.
    for name, read, write in fields:
        write(new, changes.pop(name) if name in changes else read(obj))
    if changes:
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(sorted(changes))}")
    return new
