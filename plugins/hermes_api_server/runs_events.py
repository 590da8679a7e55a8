"""A run's core events relayed as run events: coalesced deltas, tool progress and diffs,
approvals, steer, sub-agents, the end of the turn (docs/reference/api-server.md#run-events)."""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from hermes_api_server.run_state import approval_payload
from hermes_api_server.tool_diff import progress_tail, unified_diff
from hermes_api_server.turns import EventPump
from hermes_core import (
    BackgroundCompleted,
    DeltaCoalescer,
    QuestionClosed,
    QuestionRequested,
    ReasoningDelta,
    Retrying,
    SegmentStarted,
    SessionChanged,
    SessionProblem,
    SteerDelivered,
    SubagentEvent,
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
    subagent_payload,
)

if TYPE_CHECKING:
    from hermes_api_server.run_state import Run
    from hermes_api_server.runs import RunManager
    from hermes_core import AnyEvent, FileChange, Turn


class RunEvents:
    """Relays one run's turn to its journal and status through the run manager."""

    def __init__(self, runs: RunManager) -> None:
        self.runs = runs

    async def pump(self, run: Run, turn: Turn) -> None:
        """Relay the turn's events as run events until it completes."""
        pump = EventPump(turn)
        deltas = DeltaCoalescer(keep_reasoning=self.runs.state.settings.show_reasoning)
        try:
            async for batch in pump.batches(keepalive_s=3600):
                if batch is None:
                    continue
                output: dict[str, str] = {}
                for event in batch:
                    if deltas.add(event):
                        continue
                    self._flush(run, deltas)
                    if isinstance(event, ToolProgress):
                        # One tool.progress per call and batch, however the output was chunked.
                        output[event.call_id] = output.get(event.call_id, "") + event.chunk
                        continue
                    self._flush_output(run, output)
                    await self._on_event(run, event)
                self._flush(run, deltas)
                self._flush_output(run, output)
        finally:
            await pump.close()

    def _flush(self, run: Run, deltas: DeltaCoalescer) -> None:
        """Emit pending text and reasoning as one coalesced event each."""
        text, reasoning = deltas.take()
        if text is not None:
            run.output += text
            self.runs.emit(run, "message.delta", {"delta": text})
        if reasoning is not None:
            self.runs.emit(run, "reasoning.delta", {"delta": reasoning})

    def _flush_output(self, run: Run, output: dict[str, str]) -> None:
        for call_id, text in output.items():
            self.runs.emit(run, "tool.progress", {"tool_call_id": call_id, "chunk": progress_tail(text)})
        output.clear()

    async def _on_event(self, run: Run, event: AnyEvent) -> None:
        match event:
            case TurnStarted():
                if run.status == "queued":
                    await self.runs.set_status(run, "running")
            case ToolAnnounced():
                self.runs.emit(
                    run,
                    "tool.started",
                    {
                        "tool": event.name,
                        "tool_call_id": event.call_id,
                        "preview": self.runs.state.kernel.redactor(event.preview)[:200],
                        **self._diff(run, event.proposed_change),
                    },
                )
            case ToolCompleted():
                self.runs.emit(
                    run,
                    "tool.completed",
                    {
                        "tool": event.name,
                        "tool_call_id": event.call_id,
                        "duration": round(event.duration_s, 3),
                        "error": event.is_error,
                        **self._diff(run, event.file_change),
                    },
                )
            case QuestionRequested(kind="approval"):
                run.approvals[event.request_id] = event
                if run.status == "running":
                    await self.runs.set_status(run, "waiting_for_approval")
                self.runs.emit(run, "approval.request", approval_payload(event))
            case QuestionClosed(kind="approval"):
                if run.approvals.pop(event.request_id, None) is None:
                    return
                if event.reason == "answered":
                    self.runs.emit(
                        run,
                        "approval.responded",
                        {"request_id": event.request_id, "choice": event.choice, "resolved": 1},
                    )
                else:
                    why = {"timeout": "timeout", "shutdown": "shutdown"}.get(event.reason, "stopped")
                    self.runs.emit(run, "approval.expired", {"request_id": event.request_id, "reason": why})
                if not run.approvals and run.status == "waiting_for_approval":
                    await self.runs.set_status(run, "running")
            case SteerDelivered():
                self.runs.emit(run, "run.steer_delivered", {"chars": event.chars})
            case SubagentEvent():
                self.runs.emit(
                    run, f"subagent.{event.kind}", subagent_payload(event, self.runs.state.kernel.redactor)
                )
            case TurnCompleted():
                await self.runs.finish(run, event)
            case TextDelta() | ReasoningDelta() | ToolProgress():
                pass  # coalesced by pump() before they get here
            case QuestionRequested() | QuestionClosed():
                pass  # only approvals are run events
            case (
                SegmentStarted()
                | Retrying()
                | ToolDecision()
                | ToolExecuting()
                | UsageUpdated()
                | TitleChanged()
                | SessionChanged()
                | SessionProblem()
                | BackgroundCompleted()
            ):
                pass  # not run events (usage arrives with run.completed)
            case _:
                assert_never(event)

    def _diff(self, run: Run, change: FileChange | None) -> dict[str, str]:
        """Return ``{"diff": …}`` for a tool's file change (redacted), else nothing."""
        cwd = run.session.cwd if run.session is not None else None
        text = unified_diff(change, cwd) if change is not None else None
        return {"diff": self.runs.state.kernel.redactor(text)} if text else {}
