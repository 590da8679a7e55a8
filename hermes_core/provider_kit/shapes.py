"""Field checks for decoded stream events: a value of the wrong type is a broken stream."""

from __future__ import annotations

from typing import Any


def typed_field(obj: dict[str, Any], key: str, kind: type[Any]) -> Any:
    """Return ``obj[key]`` when it is a ``kind`` (None when absent or null).

    :raises ValueError: when the field is there with another type: an event of the wrong shape
        is a broken stream, never an empty answer.
    """
    value = obj.get(key)
    if value is None or isinstance(value, kind):
        return value
    raise ValueError(f"{key!r} is a {type(value).__name__}, not a {kind.__name__}")
