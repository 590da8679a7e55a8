"""The owner's side of a run command that crossed the run bus
(docs/observability.md#across-instances): whatever ``traceparent`` the envelope carried, the
command is answered; a valid one parents the ``process run.*`` span, a malformed one is ignored
(a new trace)."""

from __future__ import annotations

from types import SimpleNamespace

from hermes_api_server.runs_control import on_control
from hermes_core.tracing import GuardedTracer
from hermes_otel.settings import OtelSettings
from hermes_otel.tracer import OtelTracer
from tests.otel.conftest import Telemetry

TRACE = "7bf92f3577b34da6a3ce929d0e0e4736"
SENDER = "50f067aa0ba902b7"


def _state() -> SimpleNamespace:
    """What ``on_control`` reads of the server: its tracer, its runs (none) and its bus."""
    tracer = GuardedTracer(OtelTracer.from_globals(OtelSettings(enabled="global")))
    bus = SimpleNamespace(name="redis", instance_id="owner-1")
    return SimpleNamespace(kernel=SimpleNamespace(tracer=tracer), runs=SimpleNamespace(runs={}, bus=bus))


async def test_the_owner_answers_under_the_senders_span_and_ignores_a_malformed_one(otel: Telemetry) -> None:
    state = _state()
    valid = f"00-{TRACE}-{SENDER}-01"
    for sent in (valid, "00-garbage-01", None):
        answer = await on_control(state, "stop", "run_gone", {}, sent)  # type: ignore[arg-type]
        assert answer["error"] == "api_error" and answer["code"] == "run_not_found", answer
    spans = [s for s in otel.finished() if s.name == "process run.stop"]
    assert len(spans) == 3
    under, *roots = spans
    assert format(under.context.trace_id, "032x") == TRACE
    assert under.parent is not None and format(under.parent.span_id, "016x") == SENDER
    assert under.attributes["hermes.run.id"] == "run_gone"
    assert under.attributes["error.type"] == "run_not_found"
    for root in roots:
        assert root.parent is None and format(root.context.trace_id, "032x") != TRACE
    assert {s.kind.name for s in spans} == {"CONSUMER"}
