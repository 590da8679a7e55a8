"""A run's live state and its status resource (docs/reference/api-server.md#run-status, #run-lifecycle)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_api_server.journal import Journal
from hermes_api_server.run_event_models import ApprovalRequestFields, RunUsage
from hermes_core import QuestionRequested, redact

if TYPE_CHECKING:
    from hermes_core import Session, Turn

TERMINAL = frozenset({"completed", "failed", "cancelled", "interrupted"})
#: Keys of a stored run status that are not part of the status resource.
PRIVATE_KEYS = frozenset({"terminal_event", "log"})


@dataclass(slots=True)
class Run:
    """One run and its live state."""

    run_id: str
    principal: str
    session_id: str
    model: str
    resolved_model: str | None
    metadata: dict[str, str]
    journal: Journal
    status: str = "queued"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    last_event: str | None = None
    output: str = ""
    usage: RunUsage | None = None
    terminal_fields: dict[str, Any] = field(default_factory=dict)
    approvals: dict[str, QuestionRequested] = field(default_factory=dict)
    task: asyncio.Task[Any] | None = None
    session: Session | None = None
    turn: Turn | None = None
    stop_requested: bool = False
    flushed_at: float = 0.0
    warnings: list[str] = field(default_factory=list)
    #: The run's end is being committed (nothing is emitted after it).
    ending: bool = False
    #: Another instance ended the run (it took this one for dead); its ending is the run's.
    ended_elsewhere: bool = False
    #: Where the run's turn is in its session's event log (:func:`run_log.anchor`).
    log_anchor: dict[str, Any] | None = None
    #: The valid ``traceparent`` of the request that created the run (its turn's parent), to link
    #: the spans of commands for it that come from other traces (docs/observability.md).
    traceparent: str | None = None
    #: The run's budget admission, taken before the 202 (docs/reference/api-server.md#budgets).
    admission: Any = None
    #: Held while run events are numbered and shown: by the relay of the turn, and by a stop
    #: while the record that places its ``run.stopping`` is written (stored before shown).
    showing: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def status_object(self) -> dict[str, Any]:
        """Return the docs/reference/api-server.md#run-status status resource."""
        obj: dict[str, Any] = {
            "object": "hermes.run",
            "run_id": self.run_id,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "session_id": self.session_id,
            "model": self.model,
            "resolved_model": self.resolved_model,
            "last_event": self.last_event,
            "last_seq": self.journal.last_seq,
            "metadata": self.metadata,
            "output": self.output,
            "usage": self.usage,
            "completed": self.status == "completed",
            "pending_steer": None,
        }
        obj.update(self.terminal_fields)
        if self.status == "waiting_for_approval" and self.approvals:
            obj["approval"] = approval_payload(next(iter(self.approvals.values())))
        return obj


def approval_payload(q: QuestionRequested) -> ApprovalRequestFields:
    """Return the fields of an ``approval.request`` event."""
    remaining = max(0.0, q.deadline_monotonic - time.monotonic())
    fields = ApprovalRequestFields(
        request_id=q.request_id,
        tool=q.tool_name,
        tool_call_id=q.call_id,
        command=redact(q.command_redacted or ""),
        description=q.description or "",
        pattern_keys=list(q.approval_keys),
        choices=list(q.choices or ("once", "deny")),
        expires_at=time.time() + remaining,
    )
    if q.task_id is not None:
        fields["task_id"] = q.task_id  # asked by a child agent: its ``subagent_id``
    return fields
