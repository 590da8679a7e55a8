"""The scenario kit for host authors (docs/reference/scenarios.md).

A scenario file scripts a whole conversation for the ``mock:scenario:PATH`` model; the shipped
scenarios (:func:`shipped`) cover every event a host can meet. :mod:`.faults` lets transports
inject faults into their frames; :mod:`.transcript` runs a scenario in process and reduces what
happened to a stable transcript.
"""

from __future__ import annotations

from pathlib import Path

from hermes_core.scenarios.faults import SCENARIO_PREFIX, Fault, FrameCounter, FrameFaults, frame_faults
from hermes_core.scenarios.model import (
    Expect,
    FaultRule,
    Piece,
    Scenario,
    ScenarioTurn,
    Step,
    StepError,
    Subagent,
    ToolCall,
)
from hermes_core.scenarios.parse import FORMAT, ScenarioError, load_scenario, parse_scenario
from hermes_core.scenarios.recording import RecordedCall, RecordingProvider, read_recording
from hermes_core.scenarios.stdio_faults import RESPAWN_EXIT_CODE, FaultyStdout, StdioFaultHook

SHIPPED_DIR = Path(__file__).parent / "shipped"


def shipped() -> list[Path]:
    """Return the scenario files that ship with Hermes, sorted by name."""
    return sorted(SHIPPED_DIR.glob("*.toml"))


__all__ = [
    "FORMAT",
    "RESPAWN_EXIT_CODE",
    "SCENARIO_PREFIX",
    "SHIPPED_DIR",
    "Expect",
    "Fault",
    "FaultRule",
    "FaultyStdout",
    "FrameCounter",
    "FrameFaults",
    "Piece",
    "RecordedCall",
    "RecordingProvider",
    "Scenario",
    "ScenarioError",
    "ScenarioTurn",
    "StdioFaultHook",
    "Step",
    "StepError",
    "Subagent",
    "ToolCall",
    "frame_faults",
    "load_scenario",
    "parse_scenario",
    "read_recording",
    "shipped",
]
