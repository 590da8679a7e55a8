"""The caller's W3C ``traceparent`` header, for the turns a request starts
(docs/observability.md#propagation).

The front middleware puts the header in a context variable; tasks a handler starts (a run's
task) copy the context, so the turns they submit continue the caller's trace. The kernel checks
the value's form; a malformed header starts a new trace.
"""

from __future__ import annotations

from contextvars import ContextVar

CALLER_TRACE: ContextVar[str | None] = ContextVar("hermes_api_caller_trace", default=None)


def caller_trace() -> str | None:
    """The ``traceparent`` the current request carried, if any."""
    return CALLER_TRACE.get()
