"""Run a scenario in process and reduce what happened to a stable transcript
(docs/reference/scenarios.md#transcripts).

The transcript keeps what a host shows (texts, tool names and results, questions and answers,
outcomes, usage) and drops what differs between runs (ids, clocks, durations), so one scenario
always gives one transcript and one hash. It is the reference a host's own transcript is compared
with, and the proof that the shipped scenarios are deterministic.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_core.scenarios.model import Scenario
from hermes_core.scenarios.parse import load_scenario

# Fields that name or time a thing rather than say what happened.
_VOLATILE = frozenset(
    {
        "session_id",
        "turn_id",
        "ts",
        "call_id",
        "request_id",
        "segment_id",
        "item_ids",
        "subagent_id",
        "parent_id",
        "delegation_id",
        "user_row_id",
        "assistant_row_id",
        "deadline_monotonic",
        "timeout_s",
        "duration_s",
        "wait_s",
        "task_id",
    }
)


# Session ids (``20261206_094024_41ba30``) and durations inside tool results (delegate_task's JSON).
_ID_TEXT = re.compile(r"\b\d{8}_\d{6}_[0-9a-f]{6}\b")
_DURATION_TEXT = re.compile(r'"duration_s": [0-9.e+-]+')


def _clean(value: Any, model: str) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _clean(v, model) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list | tuple):
        return [_clean(v, model) for v in value]
    if isinstance(value, str):
        if value == model:
            return "mock:scenario:" + Path(model.split(":", 2)[-1]).name
        return _DURATION_TEXT.sub('"duration_s": 0', _ID_TEXT.sub("<id>", value))
    return value


def event_line(event: Any, model: str = "") -> dict[str, Any]:
    """Return one event as a transcript entry: its type and its stable fields.

    :param model: the scenario's model reference, shown as ``mock:scenario:FILE-NAME``.
    """
    return {"event": type(event).__name__, **_clean(event, model)}


def transcript_hash(lines: Sequence[Mapping[str, Any]]) -> str:
    """Return the SHA-256 of a transcript's canonical JSON lines."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(json.dumps(line, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Answer:
    """A question's scripted answer: its kind, the answer, and a steer sent before answering."""

    kind: str
    answer: str
    steer: str | None = None


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What a host does around one turn besides sending its prompt."""

    background: str | None = None  # a background prompt sent once the turn ended
    session_problem: bool = False  # the turn's start reports a SessionProblem
    refined_title: bool = False  # a model-written title follows the turn


# Session events outside turns that a scenario can cause, in the order a transcript shows them.
_AFTER_TURN = ("SessionProblem", "TitleChanged", "BackgroundCompleted")


async def run_scenario(
    path: str | Path,
    *,
    workspace: Path,
    settings: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Play every turn of a scenario through a fresh in-memory kernel and return the transcript.

    The kernel loads the ``mock``, ``tools`` and ``delegation`` plugins; the mock streams with
    ``time_scale`` 0. Each question is answered with the next ``expect`` answer of the scenario,
    in order (sending its ``steer`` first); a turn's ``background`` prompt is sent once the turn
    ended, and a scenario with a ``title`` turns ``titles.refine`` on.

    :param workspace: the session's working directory (tools run there).
    :param settings: more core settings, merged over the defaults.
    :raises AssertionError: a question came that the scenario does not expect.
    """
    scenario = load_scenario(path)
    merged: dict[str, Any] = {
        "model": f"mock:scenario:{path}",
        "providers": {"mock": {"time_scale": 0}},
        "titles": {"refine": scenario.title is not None},
    }
    merged.update(settings or {})
    prompts = [turn.user for turn in scenario.turns]
    plans = [
        TurnPlan(
            background=turn.background,
            session_problem=turn.session_problem is not None,
            refined_title=index == 0 and scenario.title is not None,
        )
        for index, turn in enumerate(scenario.turns)
    ]
    return await run_prompts(
        merged, prompts, _answers(scenario), workspace=workspace, label=scenario.path, plans=plans
    )


async def run_prompts(
    settings: Mapping[str, Any],
    prompts: Sequence[str],
    answers: Sequence[tuple[str, str] | Answer] = (),
    *,
    workspace: Path,
    label: str = "run",
    plans: Sequence[TurnPlan] = (),
) -> list[dict[str, Any]]:
    """Send ``prompts`` one turn after another to a fresh in-memory kernel; return the transcript.

    :param settings: the core settings (``model`` names what answers).
    :param answers: ``(question kind, answer)`` (or :class:`Answer`) for each question, in the
        order they come.
    :param label: names the run in assertion messages.
    :param plans: per turn, what else the host does and which session events to wait for.
    :raises AssertionError: a question came that ``answers`` does not expect.
    """
    from hermes_core.events import ALL_KINDS, QuestionRequested
    from hermes_core.testing import make_kernel

    kernel = make_kernel(
        entry_points=["mock", "tools", "delegation", "openai", "anthropic"], settings=settings
    )
    model = str(settings.get("model", ""))
    pending = [a if isinstance(a, Answer) else Answer(*a) for a in answers]
    lines: list[dict[str, Any]] = []
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="scenario", cwd=workspace)
        outside = _Outside(session.subscribe())
        for index, prompt in enumerate(prompts):
            plan = plans[index] if index < len(plans) else TurnPlan()
            lines.append({"event": "UserSent", "text": prompt})
            turn = await session.submit(prompt, owner="scenario", answerable=ALL_KINDS)
            async for event in turn.events():
                lines.append(event_line(event, model))
                if isinstance(event, QuestionRequested):
                    if not pending:
                        raise AssertionError(f"{label}: unexpected {event.kind} question")
                    scripted = pending.pop(0)
                    if scripted.kind != event.kind:
                        raise AssertionError(
                            f"{label}: expected a {scripted.kind} question, got {event.kind}"
                        )
                    if scripted.steer is not None:
                        lines.append({"event": "HostSteered", "text": scripted.steer})
                        session.steer(scripted.steer)
                    lines.append({"event": "HostAnswered", "kind": scripted.kind, "answer": scripted.answer})
                    kernel.answer(event.request_id, scripted.answer)
            wanted = []
            if plan.session_problem:
                wanted.append("SessionProblem")
            if plan.refined_title:
                wanted.append("TitleChanged")
            if plan.background is not None:
                lines.append({"event": "HostBackground", "text": plan.background})
                session.background(plan.background)
                wanted.append("BackgroundCompleted")
            found = await outside.wait_for(wanted, label)
            lines.extend(event_line(found[name], model) for name in _AFTER_TURN if name in found)
        outside.close()
    return lines


class _Outside:
    """Reads a session's events outside turns: the ones a scenario causes besides its turns."""

    def __init__(self, subscription: Any) -> None:
        self._sub = subscription
        self._seen: dict[str, Any] = {}

    async def wait_for(self, names: Sequence[str], label: str) -> dict[str, Any]:
        """Wait until an event of each of ``names`` arrived (at most 30 s); return and forget them."""
        import asyncio

        async def read() -> None:
            while not all(name in self._seen for name in names):
                event = await anext(self._sub)
                name = type(event).__name__
                if name == "TitleChanged" and event.origin != "refined":
                    continue
                if name in _AFTER_TURN and event.turn_id is None:
                    self._seen.setdefault(name, event)

        if names:
            try:
                await asyncio.wait_for(read(), 30)
            except TimeoutError:
                missing = [n for n in names if n not in self._seen]
                raise AssertionError(f"{label}: never got {missing}") from None
        found = {name: self._seen.pop(name) for name in names}
        return found

    def close(self) -> None:
        self._sub.close()


def _answers(scenario: Scenario) -> list[Answer]:
    """The scripted answers in the order the questions come: a step's own, then those of the
    child agents its ``delegate_task`` calls start."""
    found: list[Answer] = []
    for turn in scenario.turns:
        for step in turn.steps:
            found.extend(Answer(e.kind, e.answer, e.steer) for e in step.expect)
            for call in step.tool_calls:
                if call.name != "delegate_task":
                    continue
                goal = json.loads(call.arguments).get("goal")
                for sub in scenario.subagents:
                    if sub.goal == goal:
                        found.extend(Answer(e.kind, e.answer, e.steer) for s in sub.steps for e in s.expect)
    return found
