"""Checklist group H (modes, config options, models;
docs/reference/acp.md#modes-config-options-and-models)."""

from __future__ import annotations

from typing import Any

from tests.acp.conftest import Home
from tests.acp.helpers import of_kind


async def test_set_mode(spawn: Any, home: Home) -> None:
    """#34: set_mode → {} then config_option_update; unknown mode -32602; unknown session -32002."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})) == {}
    await agent.settle()
    update = of_kind(agent.updates(sid), "config_option_update")[-1]
    assert update["configOptions"][0]["currentValue"] == "accept_edits"
    for mode in ("nope", "off", "dont_ask"):
        error = await agent.error("session/set_mode", {"sessionId": sid, "modeId": mode})
        assert error["code"] == -32602
    error = await agent.error("session/set_mode", {"sessionId": "missing", "modeId": "default"})
    assert error["code"] == -32002


async def test_set_config_option(spawn: Any, home: Home) -> None:
    """#35: model → full list with new value, used next turn; mode → list then current_mode_update."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    result = await agent.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "mock:alt"}
    )
    assert [o["id"] for o in result["configOptions"]] == ["mode", "model"]
    assert result["configOptions"][1]["currentValue"] == "mock:alt"
    await agent.prompt(sid, "hi")
    assert agent.text(sid).startswith("alt: ")
    result = await agent.request(
        "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "ask_everything"}
    )
    assert result["configOptions"][0]["currentValue"] == "ask_everything"
    await agent.settle()
    assert of_kind(agent.updates(sid), "current_mode_update")[-1]["currentModeId"] == "ask_everything"
    bad: list[dict[str, Any]] = [
        {"configId": "nope", "value": "x"},
        {"configId": "model", "value": "mock:nope-nope"},
        {"configId": "mode", "value": "off"},
        {"configId": "mode", "type": "boolean", "value": True},
    ]
    for params in bad:
        error = await agent.error("session/set_config_option", {"sessionId": sid, **params})
        assert error["code"] == -32602, params


async def test_legacy_set_model(spawn: Any, home: Home) -> None:
    """#36: set_model right after new → {} then config_option_update; kept across resume."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.request("session/set_model", {"sessionId": sid, "modelId": "mock:alt"})) == {}
    await agent.settle()
    assert (
        of_kind(agent.updates(sid), "config_option_update")[-1]["configOptions"][1]["currentValue"]
        == "mock:alt"
    )
    await agent.prompt(sid, "hello")
    resumed = await agent.request("session/resume", {"sessionId": sid, "cwd": str(home.workspace)})
    assert resumed["models"]["currentModelId"] == "mock:alt"
    assert resumed["configOptions"][1]["currentValue"] == "mock:alt"
    error = await agent.error("session/set_model", {"sessionId": sid, "modelId": "nope:nothing"})
    assert error["code"] == -32602


async def test_off_profile_is_shown_only_when_current(spawn: Any, home: Home) -> None:
    """docs/reference/acp.md#modes: acp.default_mode = off → currentModeId off and off listed; switching away
    works."""
    home.config["acp"] = {"default_mode": "off"}
    home.write_config()
    agent = await spawn(initialize={})
    result = await agent.new(home.workspace)
    sid = result["sessionId"]
    assert result["modes"]["currentModeId"] == "off"
    assert "off" in [m["id"] for m in result["modes"]["availableModes"]]
    assert (await agent.request("session/set_mode", {"sessionId": sid, "modeId": "default"})) == {}
    error = await agent.error("session/set_mode", {"sessionId": sid, "modeId": "off"})
    assert error["code"] == -32602
