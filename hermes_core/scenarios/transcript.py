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


async def run_scenario(
    path: str | Path,
    *,
    workspace: Path,
    settings: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Play every turn of a scenario through a fresh in-memory kernel and return the transcript.

    The kernel loads the ``mock``, ``tools`` and ``delegation`` plugins; the mock streams with
    ``time_scale`` 0. Each question is answered with the next ``expect`` answer of the scenario,
    in order.

    :param workspace: the session's working directory (tools run there).
    :param settings: more core settings, merged over the defaults.
    :raises AssertionError: a question came that the scenario does not expect.
    """
    scenario = load_scenario(path)
    merged: dict[str, Any] = {
        "model": f"mock:scenario:{path}",
        "providers": {"mock": {"time_scale": 0}},
        "titles": {"refine": False},
    }
    merged.update(settings or {})
    prompts = [turn.user for turn in scenario.turns]
    return await run_prompts(merged, prompts, _answers(scenario), workspace=workspace, label=scenario.path)


async def run_prompts(
    settings: Mapping[str, Any],
    prompts: Sequence[str],
    answers: Sequence[tuple[str, str]] = (),
    *,
    workspace: Path,
    label: str = "run",
) -> list[dict[str, Any]]:
    """Send ``prompts`` one turn after another to a fresh in-memory kernel; return the transcript.

    :param settings: the core settings (``model`` names what answers).
    :param answers: ``(question kind, answer)`` for each question, in the order they come.
    :param label: names the run in assertion messages.
    :raises AssertionError: a question came that ``answers`` does not expect.
    """
    from hermes_core.events import ALL_KINDS, QuestionRequested
    from hermes_core.testing import make_kernel

    kernel = make_kernel(
        entry_points=["mock", "tools", "delegation", "openai", "anthropic"], settings=settings
    )
    model = str(settings.get("model", ""))
    pending = list(answers)
    lines: list[dict[str, Any]] = []
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="scenario", cwd=workspace)
        for prompt in prompts:
            lines.append({"event": "UserSent", "text": prompt})
            turn = await session.submit(prompt, owner="scenario", answerable=ALL_KINDS)
            async for event in turn.events():
                lines.append(event_line(event, model))
                if isinstance(event, QuestionRequested):
                    if not pending:
                        raise AssertionError(f"{label}: unexpected {event.kind} question")
                    kind, answer = pending.pop(0)
                    if kind != event.kind:
                        raise AssertionError(f"{label}: expected a {kind} question, got {event.kind}")
                    lines.append({"event": "HostAnswered", "kind": kind, "answer": answer})
                    kernel.answer(event.request_id, answer)
    return lines


def _answers(scenario: Scenario) -> list[tuple[str, str]]:
    """The scripted answers in the order the questions come: a step's own, then those of the
    child agents its ``delegate_task`` calls start."""
    found: list[tuple[str, str]] = []
    for turn in scenario.turns:
        for step in turn.steps:
            found.extend((e.kind, e.answer) for e in step.expect)
            for call in step.tool_calls:
                if call.name != "delegate_task":
                    continue
                goal = json.loads(call.arguments).get("goal")
                for sub in scenario.subagents:
                    if sub.goal == goal:
                        found.extend((e.kind, e.answer) for sub_step in sub.steps for e in sub_step.expect)
    return found
