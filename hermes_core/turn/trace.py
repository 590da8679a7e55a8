"""The spans of a turn (docs/observability.md#spans): what the agent loop tells a tracer.

Only called when ``kernel.tracer`` is set; attribute names follow the OpenTelemetry GenAI
semantic conventions. No message content goes into an attribute here: a tracer that captures
content does so itself, behind its own switch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.events import TurnOutcome, Usage
    from hermes_core.providers import ChatRequest
    from hermes_core.storage import StoredToolCall
    from hermes_core.tracing import Span, Tracer
    from hermes_core.turn import TurnRun

AGENT_NAME = "hermes"


def open_turn(run: TurnRun, tracer: Tracer) -> Span:
    """Open the turn's ``invoke_agent`` span, continuing the first item's ``traceparent``."""
    session = run.session
    parent = next((i.traceparent for i in run.items if i.traceparent), None)
    lineage = session.lineage
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.agent.id": session.id,
        "gen_ai.conversation.id": session.id,
        "hermes.turn.id": run.turn_id,
    }
    if lineage is not None:
        attributes["hermes.agent.depth"] = lineage.depth
    return tracer.turn(session_id=session.id, turn_id=run.turn_id, parent=parent, attributes=attributes)


def close_turn(span: Span, outcome: TurnOutcome, usage: Usage) -> None:
    """End the turn's span with its outcome and token usage."""
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "hermes.turn.status": outcome.status,
        "hermes.turn.reason": outcome.reason,
        "gen_ai.usage.input_tokens": usage.input,
        "gen_ai.usage.output_tokens": usage.output,
    }
    error = None
    if outcome.status == "error":
        error = outcome.error_kind or outcome.reason
    span.end(error=error, attributes=attributes)


def open_model_call(run: TurnRun, request: ChatRequest, attempt: int) -> Span | None:
    """Open a ``chat {model}`` span for one model call (one per attempt)."""
    tracer, turn = run.kernel.tracer, run.span
    if tracer is None or turn is None or run.resolved is None:
        return None
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": run.resolved.provider,
        "gen_ai.request.model": request.model,
        "hermes.attempt": attempt + 1,
    }
    if request.tools:
        attributes["hermes.request.tools"] = len(request.tools)
    return tracer.model_call(turn, provider=run.resolved.provider, model=request.model, attributes=attributes)


def close_model_call(span: Span, usage: Usage | None, finish: str, error: str | None = None) -> None:
    """End a model call's span with what the provider reported."""
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "gen_ai.response.finish_reasons": (finish,),
    }
    if usage is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input
        attributes["gen_ai.usage.output_tokens"] = usage.output
        if usage.estimated:
            attributes["hermes.usage.estimated"] = True
    span.end(error=error, attributes=attributes)


def open_tool(run: TurnRun, call: StoredToolCall, kind: str) -> Span | None:
    """Open an ``execute_tool {name}`` span inside the turn's; ``gen_ai.tool.call.id`` is the id
    the model gave the call, ``hermes.tool.call.id`` the core's (what the transports show)."""
    tracer, turn = run.kernel.tracer, run.span
    if tracer is None or turn is None:
        return None
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.provider_call_id or call.call_id,
        "gen_ai.tool.type": "function",
        "hermes.tool.call.id": call.call_id,
        "hermes.tool.kind": kind,
    }
    return tracer.tool(turn, name=call.name, call_id=call.call_id, attributes=attributes)
