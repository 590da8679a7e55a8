"""Every shipped scenario gives one transcript, whatever the run: 100 runs, one hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.events import EVENT_TYPES
from hermes_core.scenarios import shipped
from hermes_core.scenarios.transcript import run_scenario, transcript_hash

RUNS = 100

# Every kind of core event a host can meet: the kernel's closed event union.
EVENTS_SHIPPED = {cls.__name__ for cls in EVENT_TYPES}


@pytest.mark.parametrize("path", shipped(), ids=lambda p: p.stem)
async def test_a_shipped_scenario_gives_one_transcript_in_100_runs(path: Path, tmp_path: Path) -> None:
    hashes = set()
    for run in range(RUNS):
        workspace = tmp_path / f"ws{run}"
        workspace.mkdir()
        hashes.add(transcript_hash(await run_scenario(path, workspace=workspace)))
    assert len(hashes) == 1, f"{path.name}: {len(hashes)} different transcripts in {RUNS} runs"


async def test_the_shipped_scenarios_cover_every_event_and_outcome(tmp_path: Path) -> None:
    seen: set[str] = set()
    outcomes: set[tuple[str, str]] = set()
    questions: set[str] = set()
    subagent_kinds: set[str] = set()
    for path in shipped():
        workspace = tmp_path / path.stem
        workspace.mkdir()
        for line in await run_scenario(path, workspace=workspace):
            seen.add(line["event"])
            if line["event"] == "TurnCompleted":
                outcomes.add((line["outcome"]["status"], line["outcome"]["reason"]))
            if line["event"] == "QuestionRequested":
                questions.add(line["kind"])
            if line["event"] == "SubagentEvent":
                subagent_kinds.add(line["kind"])
    assert len(EVENTS_SHIPPED) == 20
    assert EVENTS_SHIPPED <= seen, f"no shipped scenario makes these happen: {sorted(EVENTS_SHIPPED - seen)}"
    assert {
        ("complete", "stop"),
        ("complete", "length"),
        ("complete", "refusal"),
        ("error", "provider_error"),
    } <= outcomes
    assert {"approval", "clarify"} <= questions
    assert {"spawn_requested", "start", "thinking", "tool", "progress", "complete"} <= subagent_kinds
