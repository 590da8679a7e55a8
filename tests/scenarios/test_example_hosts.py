"""The example hosts in docs/examples (Python and Node) run every shipped scenario against the
real ``hermes tui`` in under 60 s each, and see what the in-process transcript says they should."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.scenarios import shipped
from hermes_core.scenarios.transcript import run_scenario
from tests.cli.cli_helpers import HERMES, clean_env
from tests.timing import scaled

DOCS = Path(__file__).resolve().parents[2] / "docs" / "examples"
BUDGET_S = 60.0


def _run_host(command: list[str], home: Path) -> tuple[list[dict[str, Any]], float]:
    env = clean_env(home, {"HERMES": HERMES})
    started = time.monotonic()
    done = subprocess.run(
        command, env=env, cwd=home, capture_output=True, text=True, timeout=scaled(BUDGET_S) + 30
    )
    took = time.monotonic() - started
    assert done.returncode == 0, f"{command[0]} host failed:\n{done.stdout}\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines()], took


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, str]]]:
    """Per shipped scenario, each turn's (status, final text) from the in-process transcript."""
    import asyncio

    found: dict[str, list[tuple[str, str]]] = {}
    for path in shipped():
        workspace = tmp_path_factory.mktemp(path.stem)
        lines = asyncio.run(run_scenario(path, workspace=workspace))
        found[path.stem] = [
            (line["outcome"]["status"], line["text"]) for line in lines if line["event"] == "TurnCompleted"
        ]
    return found


def _check(summaries: list[dict[str, Any]], expected: dict[str, list[tuple[str, str]]]) -> None:
    assert [s["scenario"] for s in summaries] == [p.stem for p in shipped()]
    for summary in summaries:
        seen = [(t["status"], t["text"]) for t in summary["turns"]]
        assert seen == expected[summary["scenario"]], summary["scenario"]
        assert all(t["streamed_matches"] for t in summary["turns"])
    by_name = {s["scenario"]: s for s in summaries}
    assert by_name["approval"]["turns"][0]["questions"] == ["approval=once"]
    assert by_name["approval"]["turns"][1]["questions"] == ["approval=deny"]
    assert by_name["clarify"]["turns"][0]["questions"] == ["clarify=Python"]
    assert by_name["subagent"]["turns"][0]["tools"] == ["delegate_task"]
    assert "steer delivered" in by_name["steer"]["turns"][0]["notices"]
    assert by_name["title"]["turns"][0]["notices"][-1] == "title: Release planning"
    assert "background complete: There are three files." in by_name["background"]["turns"][0]["notices"]
    problem = "problem: plugin 'mock' failed while observing events: the scripted failure of this scenario"
    assert problem in by_name["session_problem"]["turns"][0]["notices"]


def test_the_python_example_host_passes_every_shipped_scenario(tmp_path: Path, expected: Any) -> None:
    summaries, took = _run_host([sys.executable, str(DOCS / "host-python" / "host.py")], tmp_path)
    _check(summaries, expected)
    assert took < scaled(BUDGET_S)


def test_the_node_example_host_passes_every_shipped_scenario(tmp_path: Path, expected: Any) -> None:
    node = shutil.which("node")
    assert node is not None, "Node.js (node on PATH, 18 or newer) is needed to run docs/examples/host-node"
    summaries, took = _run_host([node, str(DOCS / "host-node" / "host.mjs")], tmp_path)
    _check(summaries, expected)
    assert took < scaled(BUDGET_S)
    python_host, _ = _run_host([sys.executable, str(DOCS / "host-python" / "host.py")], tmp_path)
    assert summaries == python_host  # both hosts saw the same thing
