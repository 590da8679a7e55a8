"""Jobs every transport does, written once: binding methods, mapping errors, batching deltas.

Standard library only (no jsonrpcserver, no aiohttp): a transport adapts these to its wire library
in a few lines. See docs/architecture.md, "The transport toolkit".

* :mod:`~hermes_core.transport_kit.errors` — :class:`ErrorRule` / :class:`ErrorTable`, a
  declarative map from core exceptions to wire errors, and :func:`internal_error`, the one way
  an unexpected failure is logged under an error id and answered;
* :mod:`~hermes_core.transport_kit.binder` — :class:`MethodBinder`, which turns
  ``async impl(ctx, params)`` into a dispatcher method that never lets an exception escape;
* :mod:`~hermes_core.transport_kit.coalesce` — :class:`DeltaCoalescer`, which merges consecutive
  text or reasoning deltas of a burst into one;
* :mod:`~hermes_core.transport_kit.prompt` — :func:`run_prompt`, one prompt's events with its
  questions routed to a callback or denied, and :func:`event_payload`, an event as plain data;
* :mod:`~hermes_core.transport_kit.restart` — :func:`exec_at_exit`, a listener's real restart
  for a scenario's ``restart`` fault (the same command, pinned to the bound port).
"""

from __future__ import annotations

from hermes_core.transport_kit.binder import MethodBinder, jsonrpc_adapters
from hermes_core.transport_kit.coalesce import DeltaCoalescer
from hermes_core.transport_kit.errors import ErrorRule, ErrorTable, internal_error
from hermes_core.transport_kit.prompt import Answerer, event_payload, run_prompt
from hermes_core.transport_kit.restart import exec_at_exit

__all__ = [
    "Answerer",
    "DeltaCoalescer",
    "ErrorRule",
    "ErrorTable",
    "MethodBinder",
    "event_payload",
    "exec_at_exit",
    "internal_error",
    "jsonrpc_adapters",
    "run_prompt",
]
