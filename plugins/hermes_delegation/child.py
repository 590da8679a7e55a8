"""Run one child agent: submit its goal, relay its events as ``SubagentEvent``, report.

The child is a real session (``kernel.sessions.children.spawn`` opened it). Its turn's events
are read a burst at a time and turned into ``subagent.*`` events on the parent: text as
``progress`` and reasoning as ``thinking`` (gathered for up to 50 ms), each tool call's start and
end as ``tool``. When the run ends — or is cancelled because the parent was interrupted — the
child's usage is added to the parent's, a ``complete`` event is emitted, and the child session
is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass
from typing import Any, assert_never

from hermes_core import (
    AnyEvent,
    BackgroundCompleted,
    Kernel,
    QuestionClosed,
    QuestionRequested,
    ReasoningDelta,
    Retrying,
    SegmentStarted,
    SessionChanged,
    SessionProblem,
    SteerDelivered,
    Subagent,
    SubagentEvent,
    Subagents,
    SubagentStatus,
    TextDelta,
    TitleChanged,
    ToolAnnounced,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
    ToolProgress,
    TurnCompleted,
    TurnStarted,
    UsageUpdated,
)

INTERRUPT_WAIT_S = 5.0
PROGRESS_S = 0.05


@dataclass(frozen=True, slots=True)
class ChildResult:
    """What ``delegate_task`` reports for one task."""

    task_index: int
    subagent_id: str
    goal: str
    status: SubagentStatus
    summary: str
    error: str | None
    tool_calls: int
    input_tokens: int
    output_tokens: int
    duration_s: float
    model: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_index": self.task_index,
            "subagent_id": self.subagent_id,
            "goal": self.goal,
            "status": self.status,
            "summary": self.summary,
            "error": self.error,
            "tool_calls": self.tool_calls,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "duration_s": self.duration_s,
            "model": self.model,
        }


class Relay:
    """Emits a child's events on its parent: tool steps at once, text and reasoning gathered for
    up to ``PROGRESS_S`` so that a fast stream makes a few events a second, not one per token."""

    def __init__(self, sub: Subagent) -> None:
        self.sub = sub
        self.subagents = _subagents(sub)
        self.kernel = session_kernel(sub)
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.sent_at = time.monotonic()

    @property
    def pending(self) -> bool:
        return bool(self.text or self.thinking)

    def flush(self) -> None:
        """Emit the gathered text and reasoning now."""
        self.sent_at = time.monotonic()
        if self.text:
            chunk = "".join(self.text)
            self.sub.add_tail(chunk)
            self.subagents.emit(self.sub, "progress", {"text": chunk})
            self.text.clear()
        if self.thinking:
            self.subagents.emit(self.sub, "thinking", {"text": "".join(self.thinking)})
            self.thinking.clear()

    def feed(self, batch: list[AnyEvent]) -> TurnCompleted | None:
        """Take one burst of the child's events; return its ``TurnCompleted`` if it came."""
        sub, subagents = self.sub, self.subagents
        done: TurnCompleted | None = None
        for ev in batch:
            match ev:
                case TextDelta():
                    self.text.append(ev.text)
                case ReasoningDelta():
                    self.thinking.append(ev.text)
                case ToolAnnounced():
                    self.flush()
                    sub.tool_calls += 1
                    subagents.emit(sub, "tool", {"phase": "start", "tool": ev.name, "call_id": ev.call_id})
                case ToolCompleted():
                    self.flush()
                    first = ev.result_text.splitlines()[0] if ev.result_text else ""
                    sub.add_tail(f"\n[{ev.name}{' failed' if ev.is_error else ''}] {first[:200]}\n")
                    subagents.emit(
                        sub,
                        "tool",
                        {"phase": "done", "tool": ev.name, "call_id": ev.call_id, "is_error": ev.is_error},
                    )
                case UsageUpdated():
                    sub.usage = ev.usage
                case SubagentEvent():
                    # A grandchild's step: pass it up so the top-level host sees the whole tree.
                    self.flush()
                    parent = self.kernel.sessions.get(sub.parent_id)
                    if parent is not None:
                        run = parent.run
                        turn_id = run.turn_id if run is not None else None
                        parent.emit(dataclasses.replace(ev, session_id=parent.id, turn_id=turn_id))
                case TurnCompleted():
                    sub.usage = ev.usage
                    done = ev
                case (
                    TurnStarted()
                    | SegmentStarted()
                    | Retrying()
                    | ToolDecision()
                    | QuestionRequested()
                    | QuestionClosed()
                    | ToolExecuting()
                    | ToolProgress()
                    | SteerDelivered()
                    | TitleChanged()
                    | SessionChanged()
                    | SessionProblem()
                    | BackgroundCompleted()
                ):
                    pass  # not forwarded: the parent's host sees the child's steps only
                case _:
                    assert_never(ev)
        if done is not None or time.monotonic() - self.sent_at >= PROGRESS_S:
            self.flush()
        return done


def session_kernel(sub: Subagent) -> Kernel:
    """The kernel of a running child."""
    session = sub.session
    assert session is not None
    return session.kernel


def _subagents(sub: Subagent) -> Subagents:
    return session_kernel(sub).sessions.children


async def run_child(
    sub: Subagent, prompt: str, answerable: frozenset[str], traceparent: str | None = None
) -> ChildResult:
    """Run ``sub`` to its end and return its result; never raises except on cancellation.

    :param traceparent: the delegating tool call's span: the child's turn is traced under it.
    """
    session = sub.session
    assert session is not None
    kernel = session.kernel
    subagents = kernel.sessions.children
    parent = kernel.sessions.get(sub.parent_id)
    started = time.monotonic()
    subagents.emit(sub, "spawn_requested")
    status: SubagentStatus = "error"
    cancelled = False
    turn = None
    try:
        sub.status = "running"
        subagents.emit(sub, "start")
        turn = await session.submit(
            prompt, owner=f"subagent:{sub.parent_id}", answerable=answerable, traceparent=traceparent
        )
        relay = Relay(sub)
        done = None
        while done is None:
            batch = await turn.next_events(PROGRESS_S if relay.pending else None)
            if batch is None:  # quiet for PROGRESS_S: send what was gathered
                relay.flush()
                continue
            if not batch:
                break
            done = relay.feed(batch)
        relay.flush()
        outcome = await turn.outcome
        if outcome.status == "complete":
            status = "completed"
            sub.summary = done.text if done is not None else ""
        elif outcome.status == "interrupted":
            status = "interrupted"
            sub.error = "interrupted"
        else:
            status = "error"
            sub.error = kernel.redactor(outcome.message or outcome.reason)
            sub.summary = done.text if done is not None else ""
    except asyncio.CancelledError:
        cancelled = True
        status = "interrupted"
        sub.error = "interrupted: the parent was interrupted"
        await _stop(session, turn)
    except Exception as exc:
        status = "error"
        sub.error = kernel.redactor(f"{type(exc).__name__}: {exc}")
    finally:
        sub.status = status
        if parent is not None:
            parent.add_usage(sub.usage)
        subagents.emit(
            sub,
            "complete",
            {
                "summary": sub.summary,
                "error": sub.error,
                "tool_calls": sub.tool_calls,
                "duration_s": round(time.monotonic() - started, 3),
            },
        )
        subagents.finish(sub, status)
        with contextlib.suppress(Exception):
            await asyncio.shield(session.close())
    result = ChildResult(
        task_index=sub.task_index,
        subagent_id=sub.subagent_id,
        goal=sub.goal,
        status=status,
        summary=sub.summary,
        error=sub.error,
        tool_calls=sub.tool_calls,
        input_tokens=sub.usage.input,
        output_tokens=sub.usage.output,
        duration_s=round(time.monotonic() - started, 3),
        model=sub.model,
    )
    if cancelled:
        raise asyncio.CancelledError
    return result


async def _stop(session: Any, turn: Any) -> None:
    """Interrupt the child's turn and wait (briefly) for it to settle."""
    await session.interrupt(reason="system", discard_queue=True)
    if turn is not None:
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(turn.outcome), INTERRUPT_WAIT_S)
