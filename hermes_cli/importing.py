"""Resolve ``"module:Class"`` import strings used by transport and provider settings models."""

from __future__ import annotations

import importlib
from typing import Any


def resolve_ref(ref: Any) -> Any:
    """Return ``ref`` itself, or the object an import string ``"module:attr.path"`` names.

    :param ref: a class (or any object), an import string, or None.
    :returns: the resolved object (None stays None).
    :raises ImportError: the module cannot be imported or has no such attribute.
    """
    if not isinstance(ref, str):
        return ref
    module_name, sep, attr_path = ref.partition(":")
    if not sep or not module_name or not attr_path:
        raise ImportError(f"expected 'module:Class', got {ref!r}")
    obj: Any = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        try:
            obj = getattr(obj, attr)
        except AttributeError as exc:
            raise ImportError(f"{module_name} has no attribute {attr_path!r}") from exc
    return obj
