"""A scenario's faults on the stdio transports (docs/reference/scenarios.md#faults-on-stdio): a
``drop`` or ``restart`` cuts the output and ends the process with exit code 75 once its turns
ended; the host starts it again on the same HERMES_HOME, resumes the session and catches up
from its cursor, losing and repeating nothing. ``delay`` and ``duplicate`` work as on WebSocket."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.scenarios import RESPAWN_EXIT_CODE
from tests.timing import scaled
from tests.tui.client import TuiProcess

STEPS = """
[[turns]]
user = "go"
  [[turns.steps]]
  chunks = [
    { text = "a", delay_ms = 40 }, { text = "b", delay_ms = 40 },
    { text = "c", delay_ms = 40 }, { text = "d", delay_ms = 40 },
  ]
"""


def _scenario(tmp_path: Path, faults: str) -> dict[str, str]:
    path = tmp_path / "faulty.toml"
    path.write_text(STEPS + faults, encoding="utf-8")
    return {"HERMES_MODEL": f"mock:scenario:{path}"}


def _frames(tui: TuiProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in tui.raw_lines]


@pytest.mark.parametrize("action", ["drop", "restart"])
def test_a_cut_ends_the_process_with_75_and_a_respawned_one_resumes(tmp_path: Path, action: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _scenario(tmp_path, f'[[faults]]\ntransport = "tui"\naction = "{action}"\nafter_frames = 5\n')
    first = TuiProcess(home, env=env)
    try:
        sid = first.create()
        first.start("prompt.submit", session_id=sid, text="go")
        code = first.proc.wait(scaled(30))
    finally:
        first.close()
    assert code == RESPAWN_EXIT_CODE
    assert len(first.raw_lines) == 5  # the sixth frame and every later one were cut
    assert f"injecting fault {action} before frame 6" in first.stderr_text()
    before = [e for e in first.events(sid) if "seq" in e]
    last_seen = max(e["seq"] for e in before)

    with TuiProcess(home, env=env) as second:  # the host respawns it on the same HERMES_HOME
        second.call("session.resume", session_id=sid)
        caught = second.call("session.events.since", session_id=sid, last_seen=last_seen)
        events = caught["events"]
        assert not caught.get("truncated")
        assert second.call("session.close", session_id=sid)
    # The rule fired once, and the count outlives the process: the respawned one is not cut.
    assert "injecting fault" not in second.stderr_text()
    assert json.loads((home / "scenario-faults.json").read_text()) == {
        env["HERMES_MODEL"].split(":", 2)[2]: [1]
    }
    seqs = [e["seq"] for e in before] + [e["seq"] for e in events if "seq" in e]
    assert len(seqs) == len(set(seqs))  # nothing repeated
    assert all(e["seq"] > last_seen for e in events if "seq" in e)
    done = [e for e in events if e["type"] == "message.complete"]
    assert done and done[0]["payload"]["text"] == "abcd"
    deltas = "".join(e["payload"]["text"] for e in before + events if e["type"] == "message.delta")
    assert deltas == "abcd"  # nothing lost


def test_duplicate_writes_one_frame_twice_on_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _scenario(tmp_path, '[[faults]]\ntransport = "tui"\naction = "duplicate"\nafter_frames = 1\n')
    with TuiProcess(home, env=env) as tui:
        sid = tui.create()
        tui.wait_event(sid, "session.info", timeout=scaled(10))
        frames = _frames(tui)
    assert frames[1] == frames[2]
    assert frames[0]["params"]["type"] == "gateway.ready"


def test_delay_holds_one_frame_back_on_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _scenario(
        tmp_path, '[[faults]]\ntransport = "any"\naction = "delay"\ndelay_ms = 700\nafter_frames = 1\n'
    )
    with TuiProcess(home, env=env) as tui:
        tui.wait_event(None, "gateway.ready", timeout=scaled(10))
        started = time.monotonic()
        assert tui.call("session.create", {})["session_id"]
        assert time.monotonic() - started >= 0.7
