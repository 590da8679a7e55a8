"""Build loaded ``Row`` objects without the frozen dataclass constructor.

``Row`` is a frozen slots dataclass: its ``__init__`` stores each of its 19 fields through
``object.__setattr__``, which was most of the time a 1,000-row history load took. A plain class
with exactly the same slots is filled with ordinary attribute stores and then given ``Row`` as
its class, which Python allows between classes of identical layout; the result is a genuine,
equal ``Row``. The layout is checked once, on first use; if it ever differs (a field added to
``Row``), the constructor is used instead. The stores themselves are written out in
``codec.row_from_values``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hermes_core import Row

FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Row))


class _Plain:
    __slots__ = FIELDS


def _compatible() -> bool:
    if getattr(Row, "__slots__", None) != FIELDS:
        return False
    values: dict[str, Any] = {name: index for index, name in enumerate(FIELDS)}
    probe: Any = _Plain()
    for name, value in values.items():
        setattr(probe, name, value)
    try:
        probe.__class__ = Row
    except TypeError:
        return False
    return bool(probe == Row(**values))


_FAST: bool | None = None


def plain_row() -> Any:
    """Return an empty object of ``Row``'s layout to fill and then turn into a ``Row``
    (``obj.__class__ = Row``), or None when the layouts differ (use the constructor)."""
    global _FAST
    if _FAST is None:
        _FAST = _compatible()
    return _Plain() if _FAST else None
