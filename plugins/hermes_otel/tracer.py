"""The kernel's tracer on OpenTelemetry (docs/observability.md): spans, span events, GenAI metrics.

Span names and attributes follow the OpenTelemetry GenAI semantic conventions: ``invoke_agent
hermes`` per turn, ``chat {model}`` per model call (kind CLIENT), ``execute_tool {name}`` per tool
call; a child agent's turn is a nested ``invoke_agent`` under the delegating tool call.

Message content (the reply, tool arguments and results) is recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from hermes_core import (
    QuestionClosed,
    QuestionRequested,
    Retrying,
    ToolAnnounced,
    ToolCompleted,
    TurnCompleted,
    __version__,
)
from hermes_otel.settings import OtelSettings

log = logging.getLogger("hermes.otel")
#: Longest content attribute recorded (characters); longer text is cut and marked.
CONTENT_CHARS = 8192
_propagator = TraceContextTextMapPropagator()
_KINDS = {"producer": SpanKind.PRODUCER, "consumer": SpanKind.CONSUMER, "internal": SpanKind.INTERNAL}
# Bucket boundaries the GenAI conventions advise for durations (s) and token counts.
_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)


def _cut(text: str) -> str:
    return text if len(text) <= CONTENT_CHARS else text[:CONTENT_CHARS] + "…[cut]"


class OtelSpan:
    """One OpenTelemetry span behind the kernel's :class:`hermes_core.tracing.Span`."""

    __slots__ = ("_done", "_on_end", "kind", "span", "started")

    def __init__(self, span: Any, kind: str, on_end: Any = None) -> None:
        self.span = span
        self.kind = kind
        self.started = time.monotonic()
        self._on_end = on_end
        self._done = False

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        self.span.add_event(name, attributes=dict(attributes or {}))

    def set(self, attributes: Mapping[str, Any]) -> None:
        self.span.set_attributes(dict(attributes))

    def end(self, *, error: str | None = None, attributes: Mapping[str, Any] | None = None) -> None:
        if self._done:
            return
        self._done = True
        if attributes:
            self.span.set_attributes(dict(attributes))
        if error is not None:
            self.span.set_attribute("error.type", error)
            self.span.set_status(Status(StatusCode.ERROR, error))
        if self._on_end is not None:
            self._on_end(self, error, attributes or {})
        self.span.end()

    def traceparent(self) -> str | None:
        carrier: dict[str, str] = {}
        _propagator.inject(carrier, context=trace.set_span_in_context(self.span))
        return carrier.get("traceparent")


class OtelTracer:
    """Opens the kernel's spans on an OpenTelemetry tracer and records the GenAI metrics.

    :param tracer_provider: where spans go. :param meter_provider: where metrics go (None: the
        global one). :param capture: record message content. :param owned: providers this tracer
        built itself and shuts down in :meth:`close`.
    """

    def __init__(
        self, tracer_provider: Any, meter_provider: Any, *, capture: bool, owned: tuple[Any, ...] = ()
    ) -> None:
        self.tracer = tracer_provider.get_tracer("hermes", __version__)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter("hermes", __version__)
        self.capture = capture
        self.owned = owned
        self.op_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(_TOKEN_BUCKETS),
        )
        self.tool_duration = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="Tool execution duration",
            explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
        )
        self.turns: dict[str, OtelSpan] = {}
        self.tools: dict[str, OtelSpan] = {}

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def from_globals(cls, settings: OtelSettings) -> OtelTracer:
        """Use the providers the embedding program installed."""
        return cls(trace.get_tracer_provider(), None, capture=settings.capture_content)

    @classmethod
    def from_settings(cls, settings: OtelSettings) -> OtelTracer:
        """Build providers of our own from ``[otel]`` (the standard ``OTEL_*`` variables)."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": settings.service_name or "hermes"})
        provider = TracerProvider(resource=resource)
        exporter = _span_exporter(settings)
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        meters = _meter_provider(settings, resource)
        owned = (provider,) if meters is None else (provider, meters)
        return cls(provider, meters, capture=settings.capture_content, owned=owned)

    async def close(self) -> None:
        """Flush and shut down the providers this tracer built (off the event loop)."""
        for provider in self.owned:
            try:
                await asyncio.to_thread(provider.shutdown)
            except Exception:
                log.warning("could not flush the telemetry exporter", exc_info=True)

    # -- the kernel's Tracer -------------------------------------------------------------------
    def turn(
        self, *, session_id: str, turn_id: str, parent: str | None, attributes: Mapping[str, Any]
    ) -> OtelSpan:
        context = _propagator.extract({"traceparent": parent}) if parent else None
        span = self.tracer.start_span(
            "invoke_agent hermes", context=context, kind=SpanKind.INTERNAL, attributes=dict(attributes)
        )
        handle = OtelSpan(span, "turn", self._turn_ended)
        self.turns[turn_id] = handle
        return handle

    def model_call(
        self, turn: OtelSpan, *, provider: str, model: str, attributes: Mapping[str, Any]
    ) -> OtelSpan:
        span = self.tracer.start_span(
            f"chat {model}",
            context=trace.set_span_in_context(turn.span),
            kind=SpanKind.CLIENT,
            attributes=dict(attributes),
        )
        common = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        return OtelSpan(span, "chat", lambda h, error, attrs: self._call_ended(h, error, attrs, common))

    def tool(self, turn: OtelSpan, *, name: str, call_id: str, attributes: Mapping[str, Any]) -> OtelSpan:
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=trace.set_span_in_context(turn.span),
            kind=SpanKind.INTERNAL,
            attributes=dict(attributes),
        )
        handle = OtelSpan(span, "tool", lambda h, error, attrs: self._tool_ended(h, error, name, call_id))
        self.tools[call_id] = handle
        return handle

    def operation(
        self,
        name: str,
        *,
        parent: str | None,
        kind: str,
        attributes: Mapping[str, Any],
        links: tuple[str, ...] = (),
    ) -> OtelSpan:
        context = _propagator.extract({"traceparent": parent}) if parent else None
        linked = []
        for other in links:
            found = trace.get_current_span(_propagator.extract({"traceparent": other})).get_span_context()
            if found.is_valid:
                linked.append(trace.Link(found))
        span = self.tracer.start_span(
            name,
            context=context,
            kind=_KINDS.get(kind, SpanKind.INTERNAL),
            attributes=dict(attributes),
            links=linked,
        )
        return OtelSpan(span, "operation")

    # -- endings: metrics ----------------------------------------------------------------------
    def _turn_ended(self, handle: OtelSpan, error: str | None, attributes: Mapping[str, Any]) -> None:
        for turn_id, open_handle in list(self.turns.items()):
            if open_handle is handle:
                del self.turns[turn_id]

    def _call_ended(
        self, handle: OtelSpan, error: str | None, attributes: Mapping[str, Any], common: dict[str, str]
    ) -> None:
        labels: dict[str, Any] = dict(common)
        if error is not None:
            labels["error.type"] = error
        self.op_duration.record(time.monotonic() - handle.started, labels)
        for kind, key in (("input", "gen_ai.usage.input_tokens"), ("output", "gen_ai.usage.output_tokens")):
            count = attributes.get(key)
            if isinstance(count, int):
                self.token_usage.record(count, {**common, "gen_ai.token.type": kind})

    def _tool_ended(self, handle: OtelSpan, error: str | None, name: str, call_id: str) -> None:
        self.tools.pop(call_id, None)
        labels: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        if error is not None:
            labels["error.type"] = error
        self.tool_duration.record(time.monotonic() - handle.started, labels)

    # -- session events: span events and captured content ------------------------------------
    def observe(self, event: Any) -> None:
        """Put a session event on the span it belongs to."""
        match event:
            case QuestionRequested():
                span = self._where(event.call_id, event.turn_id)
                if span is not None:
                    attrs = {"hermes.question.kind": event.kind, "hermes.question.id": event.request_id}
                    if event.tool_name:
                        attrs["gen_ai.tool.name"] = event.tool_name
                    span.event("hermes.question.requested", attrs)
            case QuestionClosed():
                span = self._where(event.call_id, event.turn_id)
                if span is not None:
                    attrs = {
                        "hermes.question.kind": event.kind,
                        "hermes.question.id": event.request_id,
                        "hermes.question.reason": event.reason,
                    }
                    if event.choice:
                        attrs["hermes.question.choice"] = event.choice
                    span.event("hermes.question.closed", attrs)
            case Retrying():
                span = self.turns.get(event.turn_id or "")
                if span is not None:
                    span.event(
                        "hermes.retry", {"hermes.retry.attempt": event.attempt, "error.type": event.kind}
                    )
            case ToolAnnounced() if self.capture:
                span = self.tools.get(event.call_id)
                if span is not None:
                    import json

                    arguments = json.dumps(event.args_redacted, ensure_ascii=False)
                    span.set({"gen_ai.tool.call.arguments": _cut(arguments)})
            case ToolCompleted() if self.capture:
                span = self.tools.get(event.call_id)
                if span is not None:
                    span.set({"gen_ai.tool.call.result": _cut(event.result_text)})
            case TurnCompleted() if self.capture:
                span = self.turns.get(event.turn_id or "")
                if span is not None and event.text:
                    span.set({"hermes.output.text": _cut(event.text)})
            case _:
                pass

    def _where(self, call_id: str | None, turn_id: str | None) -> OtelSpan | None:
        if call_id and call_id in self.tools:
            return self.tools[call_id]
        return self.turns.get(turn_id or "")


def _span_exporter(settings: OtelSettings) -> Any:
    name = (settings.traces_exporter or "otlp").split(",")[0].strip().lower()
    if name == "none":
        return None
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)  # stdout carries protocol frames
    if name != "otlp":
        log.warning("OTEL_TRACES_EXPORTER=%s is not supported here; using otlp", name)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=_endpoint(settings, settings.traces_endpoint, "traces"))


def _endpoint(settings: OtelSettings, specific: str | None, signal: str) -> str | None:
    """The signal's own endpoint as given, else the base endpoint + ``/v1/{signal}``, else None
    (the exporter's default, or what its own variables say)."""
    if specific:
        return specific
    if settings.endpoint:
        return settings.endpoint.rstrip("/") + f"/v1/{signal}"
    return None


def _meter_provider(settings: OtelSettings, resource: Any) -> Any:
    name = (settings.metrics_exporter or "otlp").split(",")[0].strip().lower()
    if name == "none":
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    if name == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        exporter: Any = ConsoleMetricExporter(out=sys.stderr)
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter(endpoint=_endpoint(settings, None, "metrics"))
    return MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(exporter)])
