"""Checklist group B (initialize and authentication; docs/reference/acp.md#initialize, #authentication)."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from tests.acp.conftest import Home

CAPABILITIES = {
    "loadSession": True,
    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": True, "sse": False},  # the mcp extra is part of the test install
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
    """#8: capabilities exactly docs/reference/acp.md#initialize; hermes-setup only with auth.terminal;
    version matches."""
    agent = await spawn()
    plain = await agent.initialize()
    assert plain["agentCapabilities"] == CAPABILITIES
    assert [m["id"] for m in plain["authMethods"]] == ["hermes-config"]
    assert plain["agentInfo"] == {"name": "hermes", "title": "Hermes", "version": version("hermes-kernel")}
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


async def test_unconfigured_requires_authentication_and_says_so(spawn: Any, home: Home) -> None:
    """#9: no model → -32000 naming --setup (no echo fallback in an editor), stderr says the same
    once at start; after a config is written, authenticate {} and new work."""
    (home.path / "config.toml").unlink()
    agent = await spawn(initialize={})
    error = await agent.error("session/new", {"cwd": str(home.workspace), "mcpServers": []})
    assert error["code"] == -32000
    assert error["message"] == (
        'Authentication required: no model provider configured; run "hermes acp --setup"'
    )
    assert (await agent.error("authenticate", {"methodId": "hermes-config"}))["code"] == -32000
    assert (await agent.error("authenticate", {"methodId": "other"}))["code"] == -32602
    stderr = agent.stderr_path.read_text()
    assert stderr.count("no model configured") == 1
    assert "mock:echo" not in stderr and "mock model" not in stderr  # it does not claim a fallback
    home.write_config()
    assert (await agent.request("authenticate", {"methodId": "hermes-config"})) == {}
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.prompt(sid, "hello")) == {"stopReason": "end_turn"}


async def test_missing_key_requires_authentication(spawn: Any, home: Home) -> None:
    """#9: a configured provider without its key → -32000 naming the key and --setup; after the
    key is set, authenticate {} and new work."""
    home.config = {"model": "openai:gpt-4.1"}
    home.write_config()
    agent = await spawn(initialize={})
    error = await agent.error("session/new", {"cwd": str(home.workspace), "mcpServers": []})
    assert error["code"] == -32000 and "hermes acp --setup" in error["message"]
    assert "OPENAI_API_KEY" in error["message"] and "OPENAI_API_KEY" in error["data"]["detail"]
    error = await agent.error("authenticate", {"methodId": "hermes-config"})
    assert error["code"] == -32000
    assert (await agent.error("authenticate", {"methodId": "other"}))["code"] == -32602
    (home.path / ".env").write_text('OPENAI_API_KEY="sk-test-not-real"\n')
    assert (await agent.request("authenticate", {"methodId": "hermes-config"})) == {}
    assert "sessionId" in await agent.new(home.workspace)
    assert "cannot answer yet" in agent.stderr_path.read_text()  # reported at start
    assert "sk-test-not-real" not in agent.stderr_path.read_text()
