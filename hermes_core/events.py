"""The one typed event stream every transport encodes (docs/reference/core.md#turn-outcomes, #events, #usage).

Events are frozen dataclasses. Every event has ``session_id``, ``turn_id`` (``None`` outside a
turn) and ``ts`` (epoch seconds). Within a turn the order is ``TurnStarted``, any mix of the
others, then exactly one ``TurnCompleted``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from hermes_core.content import ImagePart

OutcomeStatus = Literal["complete", "error", "interrupted"]
OutcomeReason = Literal[
    "stop",
    "length",
    "refusal",
    "iteration_cap",
    "provider_error",
    "tool_crash",
    "agent_build",
    "budget_exceeded",
    "interrupted_by_user",
    "interrupted_by_system",
]
QuestionKind = Literal["approval", "clarify", "sudo", "secret"]
CloseReason = Literal["answered", "timeout", "interrupted", "closed", "shutdown", "no_answerer"]
Decision = Literal["allow", "ask", "deny"]
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
ALL_KINDS: frozenset[str] = frozenset({"approval", "clarify", "sudo", "secret"})


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage, per turn or cumulative per session (docs/reference/core.md#usage)."""

    input: int = 0
    output: int = 0
    reasoning: int = 0
    total: int = 0
    calls: int = 0
    estimated: bool = False
    context_used: int | None = None
    context_max: int | None = None
    cost_usd: float | None = None

    def plus(self, other: Usage) -> Usage:
        """Return the sum of two usages; context fields come from ``other`` (the later one)."""
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            reasoning=self.reasoning + other.reasoning,
            total=self.total + other.total,
            calls=self.calls + other.calls,
            estimated=self.estimated or other.estimated,
            context_used=other.context_used if other.context_used is not None else self.context_used,
            context_max=other.context_max if other.context_max is not None else self.context_max,
            cost_usd=cost,
        )


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended (docs/reference/core.md#turn-outcomes)."""

    status: OutcomeStatus
    reason: OutcomeReason
    error_kind: Literal["auth", "rate_limit", "upstream", "network"] | None = None
    partial: bool = False
    cap: tuple[int, int] | None = None
    retryable: bool = False
    layer: Literal["provider", "tool", "agent", "storage"] | None = None
    retry_after: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class FileChange:
    """A proposed or applied change to one file; ``old_text`` None means a new file."""

    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One entry of the agent's todo list."""

    id: str
    content: str
    status: Literal["pending", "in_progress", "completed", "cancelled"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


def _now() -> float:
    # To the millisecond: the event log keeps delta timestamps as millisecond offsets, so an
    # event read back carries exactly the timestamp it had live (docs/reference/core.md#what-the-log-holds).
    # The nearest double to a whole number of milliseconds, as round(t, 3) gives, at a fifth of
    # its cost (its correctly rounded decimal conversion was ~1 µs of every streamed delta).
    return round(time.time() * 1000) / 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event record.

    ``seq`` is the event's number in its session's event log (docs/reference/core.md#the-event-log),
    set when the session emits it (and on events read back from the log); 0 for an event that is
    not logged. It takes no part in comparisons.
    """

    session_id: str
    turn_id: str | None = None
    ts: float = field(default_factory=_now)
    seq: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted(Event):
    """A turn began: its items, the stored user row and the model it runs on."""

    item_ids: tuple[str, ...]
    user_row_id: int | None
    queued: bool
    model: str
    model_source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentStarted(Event):
    """A new stretch of the reply (text or reasoning) began."""

    segment_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(Event):
    """Reply text streamed in for a segment."""

    segment_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(Event):
    """Reasoning text streamed in for a segment."""

    segment_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Retrying(Event):
    """A model call failed and is tried again after ``wait_s`` seconds."""

    attempt: int
    wait_s: float
    kind: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAnnounced(Event):
    """The model asked for a tool call; arguments are redacted."""

    call_id: str
    name: str
    kind: str
    title: str
    args_redacted: dict[str, Any]
    preview: str
    paths: tuple[str, ...]
    proposed_change: FileChange | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDecision(Event):
    """Whether an announced call runs, asks or is denied, and who said so."""

    call_id: str
    decision: Decision
    sources: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionRequested(Event):
    """A question opened (docs/reference/core.md#questions); kind-specific fields default to empty."""

    request_id: str
    kind: QuestionKind
    timeout_s: float
    deadline_monotonic: float
    call_id: str | None = None
    task_id: str | None = None
    # approval
    tool_name: str | None = None
    approval_keys: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None
    allow_session: bool = False
    persistable: bool = False
    description: str | None = None
    reasons: tuple[str, ...] = ()
    command_redacted: str | None = None
    paths: tuple[str, ...] = ()
    # clarify
    question: str | None = None
    # sudo
    command: str | None = None
    # secret
    env_var: str | None = None
    prompt: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionClosed(Event):
    """A question ended: answered, timed out, interrupted, closed or shut down."""

    request_id: str
    kind: QuestionKind
    reason: CloseReason
    choice: str | None = None
    call_id: str | None = None
    task_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecuting(Event):
    """An allowed tool call started running."""

    call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgress(Event):
    """Output a running tool produced so far."""

    call_id: str
    chunk: str
    tail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCompleted(Event):
    """A tool call ended with its result (and any file change, todos or images)."""

    call_id: str
    name: str
    result_text: str
    is_error: bool
    duration_s: float
    file_change: FileChange | None = None
    todos: tuple[TodoItem, ...] | None = None
    images: tuple[ImagePart, ...] = ()  # images the tool returned (docs/writing-tools.md#image-results)


@dataclass(frozen=True, slots=True, kw_only=True)
class SteerDelivered(Event):
    """Steering text reached the running turn."""

    chars: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageUpdated(Event):
    """Token usage of the session and of the running turn changed."""

    usage: Usage
    turn_usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class TitleChanged(Event):
    """The session's title changed, and how it was set."""

    title: str
    origin: Literal["explicit", "derived", "refined"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionChanged(Event):
    """Fields of the session's info changed."""

    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCompleted(Event):
    """A turn ended: its outcome, the final text and the usage."""

    outcome: TurnOutcome
    text: str
    reasoning: str
    usage: Usage
    turn_usage: Usage
    pending_steer: str | None = None
    warnings: tuple[str, ...] = ()
    user_row_id: int | None = None
    assistant_row_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionProblem(Event):
    """Something failed for this session outside a turn; a turn's own failures end the turn.

    ``code`` says where: ``storage`` (a background write, e.g. of ``session.extra``, or a lease
    renewal failed),
    ``lease_lost`` (another process took the writer lease), ``plugin`` (a plugin's hook raised;
    reported once per plugin and session). ``message`` is redacted and names the culprit.
    """

    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BackgroundCompleted(Event):
    """A background prompt finished, with its text and status."""

    task_id: str
    text: str
    status: Literal["complete", "error", "interrupted"]


SubagentKind = Literal["spawn_requested", "start", "progress", "thinking", "tool", "complete"]
SubagentStatus = Literal["queued", "running", "completed", "error", "interrupted"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentEvent(Event):
    """One step of a delegated child agent, emitted on its parent session
    (docs/reference/core.md#subagents).

    ``session_id`` is the parent's; ``subagent_id`` is the child's own session id. ``payload``
    carries what is particular to the kind: ``text`` for ``progress`` and ``thinking``,
    ``tool``/``phase``/``is_error`` for ``tool``, ``summary``/``error``/``tool_calls``/
    ``duration_s`` for ``complete``.
    """

    kind: SubagentKind
    subagent_id: str
    parent_id: str | None
    payload: dict[str, Any] = field(default_factory=dict)
    depth: int = 1
    goal: str = ""
    task_index: int = 0
    task_count: int = 1
    model: str | None = None
    status: SubagentStatus = "running"
    usage: Usage | None = None
    delegation_id: str | None = None


AnyEvent: TypeAlias = (
    TurnStarted
    | SegmentStarted
    | TextDelta
    | ReasoningDelta
    | Retrying
    | ToolAnnounced
    | ToolDecision
    | QuestionRequested
    | QuestionClosed
    | ToolExecuting
    | ToolProgress
    | ToolCompleted
    | SteerDelivered
    | UsageUpdated
    | TitleChanged
    | SessionChanged
    | TurnCompleted
    | SessionProblem
    | BackgroundCompleted
    | SubagentEvent
)
"""Every event the core emits: a closed union (docs/reference/core.md#events).

Sessions emit, turns yield and the event log reads back ``AnyEvent``; an encoder matches on it and
ends with ``case _: assert_never(event)``, so mypy names every encoder that misses a type added
here.
"""

EVENT_TYPES: tuple[type[AnyEvent], ...] = get_args(AnyEvent)
"""The members of :data:`AnyEvent`, in order."""
