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


#: At $1 a token, room for two short turns (each reserves its tool-laden input estimate plus 10
#: output tokens, then settles what the mock reports) but not for the reservation of a
#: ``/compress`` call after them: measured, caps from 2,000 to 4,000 all do that.
CAP = 3000
COMPRESS_TIGHT = """model = "mock:script"
[budgets]
max_output_tokens = 10
[budgets.session]
spend_usd = {cap}
[budgets.prices."*"]
input = 1000000.0
output = 1000000.0
"""


async def test_a_compress_the_budget_refuses_answers_like_a_budget_stop(spawn: Any, home: Home) -> None:
    """``/compress`` needs a model call; when the budget refuses it the editor gets the same
    answer as a turn the budget stopped, not a plain ``end_turn``."""
    home.write_config(COMPRESS_TIGHT.format(cap=CAP))
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    for text in ("one", "two"):
        answer = await agent.prompt(sid, text)
        assert answer["stopReason"] == "end_turn", (text, answer)
    result = await agent.prompt(sid, "/compress")
    assert result["stopReason"] == "max_tokens", result
    meta = result["_meta"]["hermes"]
    assert meta["stopReason"] == "budget_exceeded"
    assert "spend_usd" in meta["message"]
    shown = [u["content"]["text"] for u in of_kind(agent.updates(sid), "agent_message_chunk")]
    assert shown[-1].startswith("Stopped: budget exceeded")
