"""A turn a budget stops (docs/protocols/acp.md#budgets): ACP's closed ``stopReason`` says
``max_tokens``, ``_meta.hermes.stopReason`` says ``budget_exceeded``, and the editor is shown why."""

from __future__ import annotations

from typing import Any

from tests.acp.conftest import Home
from tests.acp.helpers import of_kind

TIGHT = """model = "mock:script"
[budgets]
max_output_tokens = 10
[budgets.session]
spend_usd = 0.000001
[budgets.prices."*"]
input = 1000000.0
output = 1000000.0
"""


async def test_a_budget_stop_is_max_tokens_with_hermes_meta(spawn: Any, home: Home) -> None:
    home.write_config(TIGHT)
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    result = await agent.prompt(sid, "hello")
    assert result["stopReason"] == "max_tokens"
    meta = result["_meta"]["hermes"]
    assert meta["stopReason"] == "budget_exceeded"
    assert "session:" in meta["message"] and "spend_usd" in meta["message"]
    assert meta["retryAfter"] >= 1
    shown = [u["content"]["text"] for u in of_kind(agent.updates(sid), "agent_message_chunk")]
    assert shown and shown[-1].startswith("Stopped: budget exceeded")
