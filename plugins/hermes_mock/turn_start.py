"""A scenario turn's ``session_problem`` (docs/reference/scenarios.md#turns).

A host must cope with ``SessionProblem`` events (the TUI gateway's ``error``): failures outside a
turn that the kernel reports on the session, such as storage failures or a plugin that failed.
When a scenario turn names a ``session_problem``, the mock plugin fails while observing that
turn's ``TurnStarted``; the kernel reports it the way it reports any failing plugin, as a
``SessionProblem`` with code ``plugin`` (once per session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import TurnStarted, scenarios

if TYPE_CHECKING:
    from hermes_core import Session


class ScriptedProblem(RuntimeError):
    """The failure a scenario asked for; its text is the turn's ``session_problem``."""


def check(session: Session, event: object) -> None:
    """Raise the turn's ``session_problem`` when ``event`` starts a scenario turn that names one."""
    if not isinstance(event, TurnStarted) or not event.model.startswith(scenarios.SCENARIO_PREFIX):
        return
    try:
        scenario = scenarios.load_scenario(event.model[len(scenarios.SCENARIO_PREFIX) :])
    except scenarios.ScenarioError:
        return  # the provider reports a broken file on the turn itself
    users = [row.content for row in session.rows if row.role == "user"]
    if users and any(users[0].startswith(sub.goal) for sub in scenario.subagents):
        return  # a child agent or a background task: its script is a [[subagents]] one
    number = len(users)
    if 1 <= number <= len(scenario.turns):
        text = scenario.turns[number - 1].session_problem
        if text is not None:
            raise ScriptedProblem(text)
