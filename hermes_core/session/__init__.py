"""A session and what belongs to it.

- ``live.py``: :class:`Session`, a session open in this process (state, events, the queue
  runner and the small API the turn machinery uses);
- ``table.py``: :class:`Sessions` (``kernel.sessions``), the live table, opening, leases;
- ``open.py``: the procedure of opening one; ``ops.py``: rewind, compress, branch, reconcile;
- ``queue.py``: queued prompts, ``Turn`` handles, subscriptions; ``types.py``: result records.

This ``__init__`` stays light: ``Session`` loads on first use, so importing the kernel (which
imports ``table.py``) does not import the whole session machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {"Session": "hermes_core.session.live", "PROFILES": "hermes_core.session.live"}

if TYPE_CHECKING:
    from hermes_core.session.live import PROFILES, Session

__all__ = ["PROFILES", "Session"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core.session' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
