"""ACP side of the mock's ``expect`` enforcement (docs/reference/scenarios.md#expected-questions):
a permission answered otherwise than the scenario expects fails ``session/prompt`` with the
scenario file, the step's line and what differed."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_core.scenarios import SHIPPED_DIR
from tests.acp.client import RecordingClient
from tests.acp.conftest import Home

APPROVAL = SHIPPED_DIR / "approval.toml"


async def test_the_expected_permission_answer_ends_the_turn(spawn: Any, home: Home) -> None:
    client = RecordingClient()
    client.permission_answers = ["allow_once"]
    agent = await spawn(client=client, env=home.env(HERMES_MODEL=f"mock:scenario:{APPROVAL}"), initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.prompt(sid, "Clean the build directory"))["stopReason"] == "end_turn"


async def test_another_permission_answer_fails_the_prompt_naming_the_step(spawn: Any, home: Home) -> None:
    from acp import RequestError

    client = RecordingClient()
    client.permission_answers = ["allow_always"]
    agent = await spawn(client=client, env=home.env(HERMES_MODEL=f"mock:scenario:{APPROVAL}"), initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    with pytest.raises(RequestError) as caught:
        await agent.prompt(sid, "Clean the build directory")
    assert caught.value.code == -32603
    assert caught.value.args[0] == (
        f"scenario {APPROVAL}:10: turn 1 step 1: expect[0] (approval, answer 'once'): "
        "the host answered 'always'"
    )
    assert caught.value.data == {"kind": "upstream"}
