"""Checklist group B (initialize and authentication; acp.md §3, §4)."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from tests.acp.conftest import Home

CAPABILITIES = {
    "loadSession": True,
    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": False, "sse": False},
    "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}},
}


async def test_protocol_versions(raw: Any) -> None:
    """#7: any integer → 1; "1" or missing → -32602; unknown fields ignored."""
    agent = await raw()
    for index, value in enumerate([1, 2, 99]):
        frame = await agent.request(
            index, "initialize", {"protocolVersion": value, "whatever": {"x": 1}, "_meta": {}}
        )
        assert frame["result"]["protocolVersion"] == 1
    frame = await agent.request(10, "initialize", {"protocolVersion": "1"})
    assert frame["error"]["code"] == -32602
    frame = await agent.request(11, "initialize", {})
    assert frame["error"]["code"] == -32602
    frame = await agent.request(12, "initialize", {"protocolVersion": 1})
    assert "result" in frame


async def test_capabilities_and_auth_methods(spawn: Any) -> None:
    """#8: capabilities exactly §3; hermes-setup only with auth.terminal; version matches."""
    agent = await spawn()
    plain = await agent.initialize()
    assert plain["agentCapabilities"] == CAPABILITIES
    assert [m["id"] for m in plain["authMethods"]] == ["hermes-config"]
    assert plain["agentInfo"] == {"name": "hermes", "title": "Hermes", "version": version("hermes-agent")}
    terminal = await agent.initialize(auth={"terminal": True})
    setup, config = terminal["authMethods"]
    assert setup == {
        "type": "terminal",
        "id": "hermes-setup",
        "name": "Set up Hermes in a terminal",
        "description": "Choose a provider, model and API key",
        "args": ["--setup"],
    }
    assert config["id"] == "hermes-config"


async def test_unconfigured_requires_authentication(spawn: Any, home: Home) -> None:
    """#9: no provider → -32000 naming --setup; after a config, authenticate {} and new work."""
    (home.path / "config.toml").unlink()
    agent = await spawn(initialize={})
    error = await agent.error("session/new", {"cwd": str(home.workspace), "mcpServers": []})
    assert error["code"] == -32000 and "hermes acp --setup" in error["message"]
    error = await agent.error("authenticate", {"methodId": "hermes-config"})
    assert error["code"] == -32000
    assert (await agent.error("authenticate", {"methodId": "other"}))["code"] == -32602
    home.write_config()
    assert (await agent.request("authenticate", {"methodId": "hermes-config"})) == {}
    assert "sessionId" in await agent.new(home.workspace)
