"""The exception that ends a turn early with an outcome already decided."""

from __future__ import annotations

from hermes_core.events import TurnOutcome


class TurnFailed(Exception):
    """Ends the turn with a prepared outcome."""

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__(outcome.message or outcome.reason)
        self.outcome = outcome
