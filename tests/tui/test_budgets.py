"""A turn a budget stops ends with ``message.complete {status:"error", error.code:"budget_exceeded"}``
on the TUI gateway (docs/protocols/tui-gateway.md#budgets), and the session stays usable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.tui.client import TuiProcess, write_config

# A dollar per token and a cap of a millionth: the first call's reservation cannot fit.
TIGHT = """model = "mock:echo"
[budgets]
max_output_tokens = 10
[budgets.key]
spend_usd = 0.000001
[budgets.prices."*"]
input = 1000000.0
output = 1000000.0
"""


def test_a_turn_over_its_budget_says_budget_exceeded(spawn: Callable[..., TuiProcess], home: Path) -> None:
    write_config(home, TIGHT)
    tui = spawn()
    sid = tui.create()
    done = tui.turn(sid, "hello")
    assert done["status"] == "error"
    assert done["error"]["code"] == "budget_exceeded"
    assert "key:local" in done["error"]["message"] and "spend_usd" in done["error"]["message"]
    assert done["error"]["retryable"] is True
    assert tui.events(sid, "message.delta") == []  # no model call was made
    # The session is not wedged: the next prompt gets its own ending too.
    again = tui.turn(sid, "again")
    assert again["error"]["code"] == "budget_exceeded"
