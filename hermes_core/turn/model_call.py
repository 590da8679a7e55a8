"""One model call of a turn: the request, the streamed deltas, retries and usage
(docs/reference/core.md#provider-errors-and-retries).

:func:`call_model` streams the call, emitting ``SegmentStarted`` and the deltas as they arrive,
retries rate limits and upstream failures that emitted nothing yet (within the configured count
and wait budget), and accounts the usage; any other failure ends the turn with
``provider_error``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_core import tool_policy, vision
from hermes_core.content import ImagePart, with_image_notes
from hermes_core.errors import ProviderError
from hermes_core.events import (
    Retrying,
    SegmentStarted,
    TurnOutcome,
    Usage,
    UsageUpdated,
)
from hermes_core.evolve import evolve
from hermes_core.history import to_messages
from hermes_core.ids import short_id
from hermes_core.providers import (
    ChatRequest,
    FinishChunk,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    UsageChunk,
    not_a_chunk,
)
from hermes_core.turn import trace
from hermes_core.turn.deltas import MAX_MERGED, PendingDeltas, next_chunk

if TYPE_CHECKING:
    from hermes_core.storage import Row
    from hermes_core.turn import TurnRun
    from hermes_core.turn.head_start import HeadStart

RETRY_WAITS = (1.0, 2.0, 4.0, 8.0)


class TurnFailed(Exception):
    """Ends the turn early with an outcome already decided (raised by the turn's steps)."""

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__(outcome.message or outcome.reason)
        self.outcome = outcome


@dataclass(slots=True)
class CallResult:
    """What one model call produced (deltas kept as lists: joining once is linear)."""

    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    finish: str = "stop"
    usage: Usage | None = None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts)


def notes_text(notes: list[str]) -> str:
    """The system-prompt tail telling the model what its background children reported."""
    if not notes:
        return ""
    return "\n\nBackground delegations that finished since your last turn:\n" + "\n".join(notes)


def build_request(run: TurnRun, pending: Row | None = None) -> ChatRequest:
    """Build the model call of ``run`` from the session's rows (plus ``pending``, not yet stored)."""
    session = run.session
    assert run.resolved is not None
    messages = to_messages(session.rows if pending is None else [*session.rows, pending])
    if run.vision is False and any(m.parts for m in messages):
        from dataclasses import replace

        # A tool result's images become one line each, so the model knows what it did not get.
        messages = [
            replace(
                m, content=with_image_notes(m.content, m.parts) if m.role == "tool" else m.content, parts=()
            )
            if m.parts
            else m
            for m in messages
        ]
        if "images_dropped" not in run.warnings and any(
            isinstance(p, ImagePart) for i in run.items for p in i.parts
        ):
            run.warnings.append("images_dropped")
    options: dict[str, Any] = {}
    for item in run.items:
        options.update(item.model_options or {})
    return ChatRequest(
        model=run.resolved.model,
        messages=tuple(messages),
        tools=tool_policy.tool_schemas(run.kernel, session, run.answerable),
        system=tool_policy.system_prompt(run.kernel, session) + notes_text(run.notes),
        reasoning_effort=session.record.reasoning_effort or run.kernel.settings.reasoning_effort,
        options=options,
        purpose="turn",
    )


async def call_model(run: TurnRun, provider: Any, head: HeadStart | None = None) -> CallResult:
    """Make one model call of ``run`` (``head``: its first call, already opened), with retries."""
    session = run.session
    settings = run.kernel.settings
    request = head.request if head is not None else build_request(run)
    held = None
    if head is not None:
        try:
            await head.cleared()  # the first call's reservation, made while the prompt was stored
        except BaseException as exc:
            await head.discard()
            from hermes_core.errors import BudgetExceeded

            if not isinstance(exc, BudgetExceeded):
                raise
            from hermes_core.turn.budget import exceeded

            raise TurnFailed(exceeded(exc, partial=run.emitted_delta)) from exc
        held = run.budget.take_head()
    attempt = 0
    waited = 0.0
    while True:
        if head is None and run.budget.active:
            request, held = await _reserve(run, request)
        result = CallResult()
        segment: str | None = None
        emitted = False
        streamed = 0
        session.set_status("streaming")
        stream = aiter(head.chunks() if head is not None else provider.stream(request))
        head = None  # a retry opens a new call
        span = trace.open_model_call(run, request, attempt) if run.span is not None else None
        pending = PendingDeltas(session, run.turn_id)
        try:
            while True:
                try:
                    # Deltas that arrived together are merged: flushed when the stream must wait.
                    chunk = await next_chunk(stream, pending.flush)
                except StopAsyncIteration:
                    break
                if isinstance(chunk, TextChunk | ReasoningChunk):
                    if not chunk.text:
                        continue
                    if segment is None:
                        segment = short_id("seg_")
                        session.emit(
                            SegmentStarted(session_id=session.id, turn_id=run.turn_id, segment_id=segment)
                        )
                    emitted = run.emitted_delta = True
                    _record(run, result, chunk)
                    pending.add(segment, chunk.text, isinstance(chunk, ReasoningChunk))
                    streamed += 1
                    if streamed == 1 or pending.count >= MAX_MERGED:
                        # The first delta goes out before the rest of what already arrived is
                        # decoded (readers run now, not after the whole burst); later on, a
                        # provider that streams without awaiting must not starve the loop.
                        pending.flush()
                        await asyncio.sleep(0)
                    continue
                pending.flush()  # never merged across anything else, never reordered
                if isinstance(chunk, ToolCallChunk):
                    result.calls.append(chunk.call)
                elif isinstance(chunk, UsageChunk):
                    result.usage = Usage(
                        input=chunk.input,
                        output=chunk.output,
                        reasoning=chunk.reasoning,
                        total=chunk.input + chunk.output,
                        calls=1,
                    )
                elif isinstance(chunk, FinishChunk):
                    result.finish = chunk.reason
                else:
                    raise not_a_chunk(run.resolved.provider if run.resolved else "?", chunk)
            pending.flush()
        except ProviderError as err:
            pending.flush()  # what arrived before the failure was streamed
            if span is not None:
                trace.close_model_call(span, None, "error", error=err.kind)
            await run.budget.refund(held)
            held = None
            if not emitted and vision.refused_images(run, request, err):
                run.vision = False  # send the call again without the images, and say so
                request = build_request(run)
                continue
            retry = (
                err.kind in ("rate_limit", "upstream")
                and err.retryable
                and not emitted
                and attempt < settings.agent.provider_retries
            )
            budget = settings.agent.provider_retry_max_wait_s - waited
            if retry and budget > 0:
                wait = err.retry_after if err.retry_after is not None else RETRY_WAITS[min(attempt, 3)]
                wait = max(0.0, min(wait, budget))
                attempt += 1
                session.emit(
                    Retrying(
                        session_id=session.id,
                        turn_id=run.turn_id,
                        attempt=attempt,
                        wait_s=wait,
                        kind=err.kind,
                    )
                )
                await asyncio.sleep(wait)
                waited += wait
                continue
            raise TurnFailed(
                TurnOutcome(
                    status="error",
                    reason="provider_error",
                    error_kind=err.kind,
                    partial=run.emitted_delta,
                    retryable=err.retryable,
                    layer="provider",
                    retry_after=err.retry_after,
                    message=run.kernel.redactor(err.message),
                )
            ) from err
        except BaseException as exc:
            pending.flush()
            if span is not None:
                trace.close_model_call(span, None, "error", error=type(exc).__name__)
            if held is not None:
                # Cut off (an interrupt): what streamed so far was paid for.
                await _settle_cut(run, request, result, held)
            raise
        _account(run, request, result)
        await run.budget.settle(held, result.usage)
        if span is not None:
            trace.close_model_call(span, result.usage, result.finish)
        return result


async def _reserve(run: TurnRun, request: ChatRequest) -> tuple[ChatRequest, Any]:
    """Reserve a call's worst case; a refusal ends the turn with ``budget_exceeded``."""
    from hermes_core.errors import BudgetExceeded
    from hermes_core.turn.budget import exceeded

    try:
        return await run.budget.reserve(request)
    except BudgetExceeded as exc:
        raise TurnFailed(exceeded(exc, partial=run.emitted_delta)) from exc


async def _settle_cut(run: TurnRun, request: ChatRequest, result: CallResult, held: Any) -> None:
    """Charge a call cut off mid-stream by its estimate (or refund it when nothing streamed)."""
    if not result.text_parts and not result.reasoning_parts:
        await asyncio.shield(run.budget.refund(held))
        return
    from hermes_core.turn.budget import estimate_input

    out = (len(result.text) + len(result.reasoning)) // 4
    usage = result.usage or Usage(input=estimate_input(request), output=out, estimated=True)
    await asyncio.shield(run.budget.settle(held, usage))


def _record(run: TurnRun, result: CallResult, chunk: TextChunk | ReasoningChunk) -> None:
    """Keep one streamed delta's text in the call's result and the turn's (it is emitted by
    :class:`PendingDeltas`)."""
    if isinstance(chunk, TextChunk):
        result.text_parts.append(chunk.text)
        run.all_text.append(chunk.text)
    else:
        result.reasoning_parts.append(chunk.text)
        run.reasoning.append(chunk.text)


def _account(run: TurnRun, request: ChatRequest, result: CallResult) -> None:
    """Add a call's usage (estimated when the provider sent none) to the turn and the session."""
    usage = result.usage
    if usage is None:
        words_in = sum(len(m.content) for m in request.messages) // 4
        out = len(result.text) // 4 + len(result.reasoning) // 4
        usage = Usage(input=words_in, output=out, total=words_in + out, calls=1, estimated=True)
    window = run.resolved.info.context_window if run.resolved and run.resolved.info else None
    usage = evolve(usage, context_used=usage.input + usage.output, context_max=window)
    result.usage = usage
    run.turn_usage = run.turn_usage.plus(usage)
    session = run.session
    total = session.add_usage(usage)
    session.emit(
        UsageUpdated(session_id=session.id, turn_id=run.turn_id, usage=total, turn_usage=run.turn_usage)
    )
