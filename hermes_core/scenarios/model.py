"""The parts of a scenario file (docs/reference/scenarios.md), as frozen records.

A scenario scripts a whole conversation for the ``mock:scenario:PATH`` model: for each user turn
the model calls the core will make (``steps``), what each streams and when, the questions a host
should see and the answers it should give; child agents' scripts (``subagents``); and faults the
transports inject into the frames they send (``faults``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FaultAction = Literal["drop", "delay", "duplicate", "restart"]
FaultTransport = Literal["tui", "api", "acp", "any"]
FAULT_ACTIONS: tuple[str, ...] = ("drop", "delay", "duplicate", "restart")
FAULT_TRANSPORTS: tuple[str, ...] = ("tui", "api", "acp", "any")
QUESTION_KINDS: tuple[str, ...] = ("approval", "clarify", "sudo", "secret")
ERROR_KINDS: tuple[str, ...] = ("upstream", "rate_limit", "auth", "network")
FINISH_REASONS: tuple[str, ...] = ("stop", "length", "refusal")


@dataclass(frozen=True, slots=True)
class Piece:
    """One streamed delta and the pause before it, in milliseconds."""

    text: str
    delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call a step asks for; ``arguments`` is the JSON text the model "produced"."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Expect:
    """A question the host should see during a step, and the answer the scenario gives it."""

    kind: str
    answer: str
    steer: str | None = None  # text the host sends as a steer before it answers


@dataclass(frozen=True, slots=True)
class StepError:
    """A provider failure; the first ``times`` attempts of the step fail, the next succeeds."""

    kind: str
    message: str
    retryable: bool = False
    times: int = 1
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One model call: reasoning, then tool calls or text, then usage and the finish."""

    reasoning: tuple[Piece, ...] = ()
    chunks: tuple[Piece, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    expect: tuple[Expect, ...] = ()
    error: StepError | None = None
    finish: str = "stop"
    usage: tuple[int, int] | None = None  # (input, output); None counts like the mock does
    line: int = 0  # where the step starts in its file, for messages


@dataclass(frozen=True, slots=True)
class ScenarioTurn:
    """One user turn: what the host sends and the model calls that answer it."""

    user: str
    steps: tuple[Step, ...]
    line: int = 0
    background: str | None = None  # a background prompt the host sends once the turn ended
    session_problem: str | None = None  # a plugin failure reported as the turn starts


@dataclass(frozen=True, slots=True)
class Subagent:
    """The script of a child agent started by ``delegate_task`` with this ``goal``."""

    goal: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class FaultRule:
    """Something a transport does to an outgoing frame (docs/reference/scenarios.md#faults).

    The rule fires on the frame that follows ``after_frames`` frames on one connection or stream,
    at most ``times`` times in the process.
    """

    transport: str
    action: str
    after_frames: int
    delay_ms: int = 0
    times: int = 1


@dataclass(frozen=True, slots=True)
class Scenario:
    """A parsed scenario file."""

    name: str
    path: str
    description: str = ""
    turns: tuple[ScenarioTurn, ...] = ()
    subagents: tuple[Subagent, ...] = ()
    faults: tuple[FaultRule, ...] = ()
    recording: str | None = None  # a directory written by --record, replayed instead of turns
    covers: tuple[str, ...] = field(default=())
    title: str | None = None  # the model-written title (titles.refine) after the first turn
