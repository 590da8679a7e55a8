"""Tracing the agent loop (docs/observability.md): the contract a tracing plugin implements.

The kernel opens a span for each turn (``invoke_agent``), each model call (``chat``) and each
tool call (``execute_tool``), and passes the W3C ``traceparent`` of the span a piece of work runs
under to whatever continues it: a child agent's turn, an MCP request, another instance. Spans are
opaque handles here; a plugin (``hermes_tracers``) maps them onto a tracing library. With no
tracer installed the kernel keeps ``kernel.tracer`` None and does nothing at all.

Handles are called from the event loop only and must not block or raise: a tracer that fails is
the tracer's problem, never the turn's (the kernel logs and carries on).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hermes_core.events import Event
    from hermes_core.kernel import Kernel

log = logging.getLogger("hermes.tracing")

#: ``version-traceid-spanid-flags`` (W3C Trace Context, version 00).
TRACEPARENT_RE = re.compile(r"^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")

Attributes = Mapping[str, "str | int | float | bool | tuple[str, ...]"]


def valid_traceparent(value: object) -> str | None:
    """Return ``value`` when it is a W3C ``traceparent`` of version 00, else None (a malformed
    one is ignored, as the Trace Context recommendation says: the work starts a new trace)."""
    if not isinstance(value, str):
        return None
    value = value.strip().lower()
    return value if len(value) == 55 and TRACEPARENT_RE.match(value) else None


def traceparent_from_meta(meta: object) -> str | None:
    """The valid ``traceparent`` in a JSON-RPC ``_meta`` object (ACP, the TUI gateway), or None."""
    return valid_traceparent(meta.get("traceparent")) if isinstance(meta, dict) else None


class Span(Protocol):
    """One open span."""

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        """Record a point in time inside the span (an approval asked, a retry)."""
        ...

    def set(self, attributes: Attributes) -> None:
        """Add or replace attributes."""
        ...

    def end(self, *, error: str | None = None, attributes: Attributes | None = None) -> None:
        """Close the span; ``error`` is the ``error.type`` of a failure (None: it went well)."""
        ...

    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` naming this span, for work that continues it elsewhere."""
        ...


class Tracer(Protocol):
    """What the kernel asks of a tracing plugin."""

    def turn(self, *, session_id: str, turn_id: str, parent: str | None, attributes: Attributes) -> Span:
        """Open the ``invoke_agent`` span of a turn; ``parent`` a ``traceparent`` or None."""
        ...

    def model_call(self, turn: Span, *, provider: str, model: str, attributes: Attributes) -> Span:
        """Open the ``chat {model}`` span of one model call inside ``turn``."""
        ...

    def tool(self, turn: Span, *, name: str, call_id: str, attributes: Attributes) -> Span:
        """Open the ``execute_tool {name}`` span of one tool call inside ``turn``."""
        ...

    def observe(self, event: Event) -> None:
        """See every session event (questions, retries, results), e.g. to put span events on
        the span it belongs to; called for each event, so it must be cheap."""
        ...

    def operation(
        self,
        name: str,
        *,
        parent: str | None,
        kind: str,
        attributes: Attributes,
        links: tuple[str, ...] = (),
    ) -> Span:
        """Open the span of other work that continues a trace, such as a command one instance
        forwards to the instance that owns a run (docs/observability.md#across-instances).

        :param parent: a ``traceparent`` or None (a new trace).
        :param kind: ``"producer"`` (this process hands the work on), ``"consumer"`` (this
            process does work another one handed on) or ``"internal"``.
        :param links: ``traceparent`` values of related spans in other traces (the span that
            started the run a command acts on).
        """
        ...


@dataclass(frozen=True, slots=True)
class TracerSpec:
    """A tracing plugin: ``factory(kernel)`` returns a :class:`Tracer`, or None when it is not
    configured (its library missing, switched off): then the next spec is tried.

    :param config_section: the ``config.toml`` table it reads (``kernel.settings.section``).
    :param env: field of that table → environment variable the CLI layers over it.
    """

    name: str
    factory: Any  # Callable[[Kernel], Tracer | None]
    config_section: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


def build_tracer(kernel: Kernel) -> Tracer | None:
    """Return the first tracer a ``hermes_tracers`` spec builds, guarded; a failing factory is
    logged and skipped. None (no tracing) when no spec builds one."""
    for spec in kernel.registry.tracers.values():
        try:
            tracer = spec.factory(kernel)
        except Exception:
            log.warning("tracer %s could not start; tracing stays off", spec.name, exc_info=True)
            continue
        if tracer is not None:
            return GuardedTracer(tracer)
    return None


class _Noop:
    """The span a failed ``open`` gives: it does nothing."""

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        pass

    def set(self, attributes: Attributes) -> None:
        pass

    def end(self, *, error: str | None = None, attributes: Attributes | None = None) -> None:
        pass

    def traceparent(self) -> str | None:
        return None


class GuardedSpan:
    """A plugin's span whose failures are logged, never raised into the agent loop."""

    __slots__ = ("inner",)

    def __init__(self, inner: Span) -> None:
        self.inner = inner

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        try:
            self.inner.event(name, attributes)
        except Exception:
            log.warning("tracer failed to record an event", exc_info=True)

    def set(self, attributes: Attributes) -> None:
        try:
            self.inner.set(attributes)
        except Exception:
            log.warning("tracer failed to set attributes", exc_info=True)

    def end(self, *, error: str | None = None, attributes: Attributes | None = None) -> None:
        try:
            self.inner.end(error=error, attributes=attributes)
        except Exception:
            log.warning("tracer failed to end a span", exc_info=True)

    def traceparent(self) -> str | None:
        try:
            return valid_traceparent(self.inner.traceparent())
        except Exception:
            log.warning("tracer failed to name a span", exc_info=True)
            return None


class GuardedTracer:
    """A plugin's tracer whose failures are logged; its spans are guarded too."""

    __slots__ = ("inner",)

    def __init__(self, inner: Tracer) -> None:
        self.inner = inner

    def turn(self, *, session_id: str, turn_id: str, parent: str | None, attributes: Attributes) -> Span:
        try:
            return GuardedSpan(
                self.inner.turn(session_id=session_id, turn_id=turn_id, parent=parent, attributes=attributes)
            )
        except Exception:
            log.warning("tracer failed to open a turn span", exc_info=True)
            return _Noop()

    def model_call(self, turn: Span, *, provider: str, model: str, attributes: Attributes) -> Span:
        try:
            inner = turn.inner if isinstance(turn, GuardedSpan) else turn
            return GuardedSpan(
                self.inner.model_call(inner, provider=provider, model=model, attributes=attributes)
            )
        except Exception:
            log.warning("tracer failed to open a model call span", exc_info=True)
            return _Noop()

    def tool(self, turn: Span, *, name: str, call_id: str, attributes: Attributes) -> Span:
        try:
            inner = turn.inner if isinstance(turn, GuardedSpan) else turn
            return GuardedSpan(self.inner.tool(inner, name=name, call_id=call_id, attributes=attributes))
        except Exception:
            log.warning("tracer failed to open a tool span", exc_info=True)
            return _Noop()

    def observe(self, event: Event) -> None:
        try:
            self.inner.observe(event)
        except Exception:
            log.warning("tracer failed to observe an event", exc_info=True)

    def operation(
        self,
        name: str,
        *,
        parent: str | None,
        kind: str,
        attributes: Attributes,
        links: tuple[str, ...] = (),
    ) -> Span:
        opener = getattr(self.inner, "operation", None)
        if opener is None:
            return _Noop()  # a tracer written before operations were traced
        try:
            return GuardedSpan(opener(name, parent=parent, kind=kind, attributes=attributes, links=links))
        except Exception:
            log.warning("tracer failed to open a %s span", name, exc_info=True)
            return _Noop()
