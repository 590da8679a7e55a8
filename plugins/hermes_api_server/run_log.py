"""A run's events as a projection of its turn in the session's event log
(docs/reference/api-server.md#resume-after-a-restart).

A run's event numbers are a pure function of what the kernel logged: ``run.started`` is seq 1,
then every logged event of the run's turn that shows as a run event is numbered 2, 3, … in log
order (one run event per core event: nothing is merged by timing), and the terminal event comes
last. The live relay (:mod:`hermes_api_server.runs_events`) and a read after the owner restarted
or died (:func:`replay`) use the same :class:`RunProjection`, so a ``Last-Event-ID`` a client got
live names the same event when read back from the log. The owner shows an event only once the
core events it comes from are stored (``kernel.events.durable``), so nothing a client saw is
missing from the log after a ``kill -9``.

What the record of a run keeps to find its turn in the log (``log`` in the stored status, never
shown): the session's log head when the run's prompt was submitted (``after``), the prompt's
queue item (``item_id``), the workspace diffs are shown relative to (``cwd``), and the seq and
timestamp of each event the API itself added, with no core event behind it (:data:`ADDED`:
``run.stopping`` under ``stopping``, ``run.steered`` under ``steered``), written before the
event is shown.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, assert_never

from hermes_api_server.journal import Journal
from hermes_api_server.run_event_models import (
    ApprovalExpiredFields,
    ApprovalRespondedFields,
    DeltaFields,
    NoFields,
    RunStartedFields,
    SteerDeliveredFields,
    SteeredFields,
    ToolCompletedFields,
    ToolProgressFields,
    ToolStartedFields,
)
from hermes_api_server.run_state import approval_payload
from hermes_api_server.tool_diff import progress_tail, unified_diff
from hermes_core import (
    BackgroundCompleted,
    LogGap,
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
    from collections.abc import Callable, Mapping

    from hermes_core import AnyEvent, Event, FileChange, Kernel

log = logging.getLogger("hermes.api.runs")
#: Events read from the log per page while replaying a run.
PAGE = 5000
#: At most this many log events are read for one run's replay (a longer turn shows a gap).
REPLAY_MAX = 200_000


@dataclass(slots=True)
class RunProjection:
    """Turns a run's core events into run events ``(name, fields)``, the same way live and
    replayed (state: the approvals still open)."""

    redact: Callable[[str], str]
    show_reasoning: bool
    cwd: Path | None
    open_approvals: set[str] = field(default_factory=set)

    def feed(self, event: AnyEvent) -> tuple[str, Mapping[str, Any]] | None:
        """Return the run event ``event`` shows as, or None (the terminal is not projected)."""
        match event:
            case TextDelta():
                if not event.text:
                    return None
                text: DeltaFields = {"delta": event.text}  # a literal: the hot path skips a call
                return "message.delta", text
            case ReasoningDelta():
                if not self.show_reasoning or not event.text:
                    return None
                reasoning: DeltaFields = {"delta": event.text}
                return "reasoning.delta", reasoning
            case ToolProgress():
                if not event.chunk:
                    return None
                return "tool.progress", ToolProgressFields(
                    tool_call_id=event.call_id, chunk=progress_tail(event.chunk)
                )
            case ToolAnnounced():
                started = ToolStartedFields(
                    tool=event.name, tool_call_id=event.call_id, preview=self.redact(event.preview)[:200]
                )
                diff = self._diff(event.proposed_change)
                if diff:
                    started["diff"] = diff
                return "tool.started", started
            case ToolCompleted():
                completed = ToolCompletedFields(
                    tool=event.name,
                    tool_call_id=event.call_id,
                    duration=round(event.duration_s, 3),
                    error=event.is_error,
                )
                diff = self._diff(event.file_change)
                if diff:
                    completed["diff"] = diff
                return "tool.completed", completed
            case QuestionRequested(kind="approval"):
                self.open_approvals.add(event.request_id)
                return "approval.request", approval_payload(event)
            case QuestionClosed(kind="approval"):
                if event.request_id not in self.open_approvals:
                    return None
                self.open_approvals.discard(event.request_id)
                if event.reason == "answered":
                    return "approval.responded", ApprovalRespondedFields(
                        request_id=event.request_id, choice=event.choice, resolved=1
                    )
                why: Literal["timeout", "shutdown", "stopped"] = (
                    "timeout"
                    if event.reason == "timeout"
                    else "shutdown"
                    if event.reason == "shutdown"
                    else "stopped"
                )
                return "approval.expired", ApprovalExpiredFields(request_id=event.request_id, reason=why)
            case SteerDelivered():
                return "run.steer_delivered", SteerDeliveredFields(chars=event.chars)
            case SubagentEvent():
                return f"subagent.{event.kind}", subagent_payload(event, self.redact)
            case QuestionRequested() | QuestionClosed():
                return None  # only approvals are run events
            case TurnStarted() | TurnCompleted():
                return None  # the run's start and end are written by the run manager
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
                return None  # not shown on a run's stream
            case _:
                assert_never(event)

    def _diff(self, change: FileChange | None) -> str | None:
        text = unified_diff(change, self.cwd) if change is not None else None
        return self.redact(text) if text else None


def event_time(event: Event) -> float:
    """The timestamp a run event projected from ``event`` carries (live and replayed alike)."""
    return round(event.ts, 3)


@dataclass(slots=True)
class Replay:
    """A run read back from its session's log.

    :ivar payloads: the run events numbered 1.. (``run.started`` first), without the terminal.
    :ivar done: the turn's ``TurnCompleted`` when the log holds it.
    :ivar output: the text of the ``message.delta`` events.
    :ivar complete: the log gave every event of the run (no gap, turn found); else the
        payloads are the ones it could number for sure (``run.started`` only, at worst).
    """

    payloads: list[dict[str, Any]]
    done: TurnCompleted | None
    output: str
    complete: bool


#: The run events the API adds itself, by their key in the record's ``log`` entry (each a list
#: of ``[seq, timestamp]``): no core event is behind them, so the record places them.
ADDED: dict[str, tuple[str, Mapping[str, Any]]] = {
    "stopping": ("run.stopping", NoFields()),
    "steered": ("run.steered", SteeredFields(accepted=True)),
}


def anchor(after: int | None, item_id: str, cwd: Path | None) -> dict[str, Any]:
    """Return the ``log`` entry of a run's record (see the module docstring)."""
    entry: dict[str, Any] = {"after": after or 0, "item_id": item_id, "cwd": str(cwd) if cwd else None}
    entry.update((key, []) for key in ADDED)
    return entry


def _added(run_id: str, at: list[tuple[int, float, str]], payloads: list[dict[str, Any]]) -> None:
    """Append the events the API added that come next (``at``: sorted, consumed)."""
    while at and at[0][0] == len(payloads) + 1:
        seq, ts, key = at.pop(0)
        name, fields = ADDED[key]
        payloads.append(_payload(run_id, seq, name, fields, ts))


async def replay(kernel: Kernel, show_reasoning: bool, status: dict[str, Any]) -> Replay:
    """Rebuild a run's events from its session's event log (``status`` is its stored record)."""
    run_id = str(status.get("run_id"))
    started = _payload(
        run_id,
        1,
        "run.started",
        RunStartedFields(
            session_id=str(status.get("session_id")),
            model=status.get("model"),
            resolved_model=status.get("resolved_model"),
        ),
        status.get("created_at"),
    )
    entry = status.get("log")
    if not isinstance(entry, dict) or not kernel.events.enabled:
        return Replay([started], None, "", False)
    cwd = Path(entry["cwd"]) if entry.get("cwd") else None
    added = sorted((int(s), float(t), key) for key in ADDED for s, t in entry.get(key) or [])
    projection = RunProjection(kernel.redactor, show_reasoning, cwd)
    payloads = [started]
    output: list[str] = []
    turn_id: str | None = None
    done: TurnCompleted | None = None
    cursor = int(entry.get("after") or 0)
    read = 0
    session_id = str(status.get("session_id"))
    try:
        while read < REPLAY_MAX and done is None:
            page = await kernel.events.read(session_id, after=cursor, limit=PAGE)
            for item in page.items:
                if isinstance(item, LogGap):
                    # A ``lost`` range was never shown (the owner shows only stored events);
                    # trimmed or unreadable events of the turn make the numbering unsure.
                    if item.reason != "lost":
                        return Replay(payloads, None, "".join(output), False)
                    continue
                event: AnyEvent = item
                if turn_id is None:
                    if isinstance(event, TurnStarted) and entry.get("item_id") in event.item_ids:
                        turn_id = event.turn_id
                    continue
                if event.turn_id != turn_id:
                    continue
                if isinstance(event, TurnCompleted):
                    done = event
                    break
                shown = projection.feed(event)
                if shown is None:
                    continue
                _added(run_id, added, payloads)
                name, fields = shown
                if name == "message.delta":
                    output.append(fields["delta"])
                payloads.append(_payload(run_id, len(payloads) + 1, name, fields, event_time(event)))
            read += len(page.items)
            if not page.more:
                break
            cursor = page.last_seq
    except Exception:
        log.warning("reading run %s back from the event log failed", run_id, exc_info=True)
        return Replay([started], None, "", False)
    _added(run_id, added, payloads)
    return Replay(payloads, done, "".join(output), turn_id is not None and read < REPLAY_MAX)


def _payload(run_id: str, seq: int, name: str, fields: Mapping[str, Any], ts: Any) -> dict[str, Any]:
    return {"event": name, "run_id": run_id, "seq": seq, "timestamp": ts, **fields}


def replayed_journal(run_id: str, found: Replay, terminal: dict[str, Any] | None) -> Journal:
    """Return a journal holding a replayed run's events (those below its stored terminal event)
    and the terminal event; seqs it cannot give are a ``stream.gap`` to its readers."""
    end = int(terminal["seq"]) if terminal is not None else None
    kept = [p for p in found.payloads if end is None or int(p["seq"]) < end]
    journal = Journal(run_id, len(kept) + 1)
    for payload in kept:
        journal.add(payload)
    journal.show(len(kept))
    if terminal is not None:
        journal.set_terminal(terminal)
    return journal
