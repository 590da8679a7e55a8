"""Check a ``mock:scenario:PATH`` model before anything starts (docs/reference/scenarios.md).

A scenario file with a problem stops the command with ``Error: FILE:LINE: problem`` and exit
code 2 (through :func:`hermes_cli.failures.guarded`) before a transport opens or a turn runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "mock:scenario:"


def check_scenario_model(model: Any) -> None:
    """Load the scenario a model reference names, if it names one.

    :param model: the effective model reference (flag, environment or ``config.toml``).
    :raises hermes_core.scenarios.ScenarioError: the file cannot be read or is not a scenario.
    """
    if not isinstance(model, str) or not model.startswith(PREFIX):
        return
    from hermes_core.scenarios import load_scenario

    load_scenario(model[len(PREFIX) :])


def check_settings(raw: Mapping[str, Any], flag: str | None = None) -> None:
    """Check the model a command will use: ``flag`` when given, else the loaded settings'."""
    check_scenario_model(flag or raw.get("model"))
