"""Enforce a scenario's ``expect`` (docs/reference/scenarios.md#expected-questions).

The mock plugin watches the questions of every turn a scenario model answers
(:func:`observe`, fed by ``hermes_on_event``): which tool call asked what, and how the question
closed. When the model is called for the next step of a turn, :func:`problem` compares what the
host did with what the previous step ``expect`` s; a difference fails the call, so the turn ends
with an error naming the scenario file, the step's line and what differed, on every surface.

Turns are told apart by the asyncio task that runs them: a turn's tool round runs in the task
that then calls the model for the next step, so ``ToolAnnounced`` and ``ToolCompleted`` record
the session id in a context variable that the provider reads back; each child agent's turn runs
in a task of its own.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

from hermes_core import (
    QuestionClosed,
    QuestionRequested,
    ToolAnnounced,
    ToolCompleted,
    TurnCompleted,
    TurnStarted,
    scenarios,
)

_SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hermes_mock_scenario_session", default=None
)


@dataclass(slots=True)
class Asked:
    """One question of the running turn and how it closed (``reason`` None while open)."""

    request_id: str
    kind: str
    call_id: str | None
    reason: str | None = None
    choice: str | None = None


@dataclass(slots=True)
class Ledger:
    """What one scenario turn's tool round did: the calls it ran and the questions they asked."""

    calls: list[str] = field(default_factory=list)
    asked: list[Asked] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    #: Set once the next step checked this round; a retried call gets the same verdict.
    checked: bool = False
    verdict: str | None = None


#: session id → the ledger of its running scenario turn since the model was last called.
_LEDGERS: dict[str, Ledger] = {}


def observe(session_id: str, event: object) -> None:
    """Record what a scenario turn's host is asked and how it answers."""
    if isinstance(event, TurnStarted):
        if event.model.startswith(scenarios.SCENARIO_PREFIX):
            _LEDGERS[session_id] = Ledger()
        else:
            _LEDGERS.pop(session_id, None)
        return
    # A child agent's question is asked on its parent's session, with the child's id as task_id.
    owner = getattr(event, "task_id", None) if isinstance(event, QuestionRequested | QuestionClosed) else None
    ledger = _LEDGERS.get(owner or session_id)
    if ledger is None:
        return
    if isinstance(event, ToolAnnounced):
        _SESSION.set(session_id)
        if ledger.checked:  # a new tool round
            ledger = _LEDGERS[owner or session_id] = Ledger()
        ledger.calls.append(event.call_id)
    elif isinstance(event, ToolCompleted):
        _SESSION.set(session_id)
        ledger.results[event.call_id] = event.result_text
    elif isinstance(event, QuestionRequested):
        ledger.asked.append(Asked(event.request_id, event.kind, event.call_id))
    elif isinstance(event, QuestionClosed):
        for asked in ledger.asked:
            if asked.request_id == event.request_id:
                asked.reason = event.reason
                asked.choice = event.choice
    elif isinstance(event, TurnCompleted):
        _LEDGERS.pop(session_id, None)


def problem(step: scenarios.Step) -> str | None:
    """Return how the host's answers to ``step``'s questions differ from its ``expect``, or None.

    Called when the model is called again after ``step``'s tool calls ran; a retry of that call
    gets the same answer, and the next tool round starts a new ledger.

    :returns: None as well when the turn is not watched (no scenario turn in this task).
    """
    sid = _SESSION.get()
    ledger = _LEDGERS.get(sid) if sid is not None else None
    if ledger is None:
        return None
    if not ledger.checked:
        ledger.verdict = _compare(step, ledger)
        ledger.checked = True
    return ledger.verdict


def _compare(step: scenarios.Step, ledger: Ledger) -> str | None:
    calls = set(ledger.calls)
    asked = [a for a in ledger.asked if a.call_id in calls]
    results = ledger.results
    for index, expected in enumerate(step.expect):
        what = f"expect[{index}] ({expected.kind}, answer {expected.answer!r})"
        if index >= len(asked):
            return f"{what}: no {expected.kind} question was asked"
        got = asked[index]
        if got.kind != expected.kind:
            return f"{what}: the host was asked a {got.kind} question instead"
        if got.reason != "answered":
            return f"{what}: the question was not answered ({got.reason or 'still open'})"
        if got.kind == "approval" and got.choice != expected.answer:
            return f"{what}: the host answered {got.choice!r}"
        if got.kind == "clarify":
            result = results.get(got.call_id or "", "")
            if not result.rstrip().endswith(expected.answer):
                return f"{what}: the host's answer was not {expected.answer!r} (the tool got {result!r})"
    if len(asked) > len(step.expect):
        extra = asked[len(step.expect)]
        return f"the host was asked a {extra.kind} question the step does not expect"
    return None
