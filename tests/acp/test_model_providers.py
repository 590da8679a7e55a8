"""``/model`` over ACP on the three set-ups of issue 22 (docs/slash-commands.md#model):
an OpenAI key only, an OpenRouter key only, and the ``openai`` provider at a self-hosted server.

A name only a keyless provider offers is refused with the key to set; nothing switches, so the
session keeps answering. The picker always offers the models the session ran, and a self-hosted
server's own list arrives after the session opens.
"""

from __future__ import annotations

from typing import Any

from tests.acp.conftest import Home
from tests.providers.self_hosted import (
    OPENAI_ONLY,
    OPENROUTER_ONLY,
    SelfHosted,
    assert_chat,
    self_hosted_config,
)
from tests.timing import eventually


def model_option(result_or_update: dict[str, Any]) -> dict[str, Any]:
    return next(o for o in result_or_update["configOptions"] if o["id"] == "model")


def offered(option: dict[str, Any]) -> list[str]:
    return [o["value"] for o in option["options"]]


def model_updates(agent: Any, sid: str) -> list[dict[str, Any]]:
    return [model_option(u) for u in agent.updates(sid) if u.get("sessionUpdate") == "config_option_update"]


async def test_openai_key_only_refuses_keyless_models_and_keeps_working(spawn: Any, home: Home) -> None:
    home.write_config(OPENAI_ONLY)
    agent = await spawn(initialize={})
    opened = await agent.new(home.workspace)
    sid = opened["sessionId"]
    option = model_option(opened)
    assert option["currentValue"] == "openai:gpt-4.1-mini"
    assert "openai:gpt-4.1" in offered(option)
    assert not [v for v in offered(option) if v.startswith(("anthropic:", "openrouter:"))]

    assert (await agent.prompt(sid, "/model claude-sonnet-4")) == {"stopReason": "end_turn"}
    said = agent.text(sid)
    assert "ANTHROPIC_API_KEY" in said and "OPENROUTER_API_KEY" in said
    assert "Model switched" not in said
    refused = await agent.error(
        "session/set_model", {"sessionId": sid, "modelId": "anthropic:claude-sonnet-4-6"}
    )
    assert refused["code"] == -32602 and "ANTHROPIC_API_KEY" in refused["message"]
    refused = await agent.error(
        "session/set_config_option",
        {"sessionId": sid, "configId": "model", "value": "anthropic:claude-sonnet-4-6"},
    )
    assert refused["code"] == -32602

    # Still on OpenAI: a bare name switches inside it, and the picker takes the old model back.
    assert (await agent.prompt(sid, "/model gpt-4.1")) == {"stopReason": "end_turn"}
    assert "Model switched to openai:gpt-4.1 (this session)" in agent.text(sid)
    back = await agent.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "openai:gpt-4.1-mini"}
    )
    assert model_option(back)["currentValue"] == "openai:gpt-4.1-mini"


async def test_openrouter_key_only_stays_on_openrouter(spawn: Any, home: Home) -> None:
    home.write_config(OPENROUTER_ONLY)
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.prompt(sid, "/model claude-sonnet-4")) == {"stopReason": "end_turn"}
    switched = "Model switched to openrouter:anthropic/claude-sonnet-4.6"
    assert f"{switched} (resolved from claude-sonnet-4; this session)" in agent.text(sid)
    assert (await agent.prompt(sid, "/model gpt-4.1")) == {"stopReason": "end_turn"}
    assert "Model switched to openrouter:openai/gpt-4.1 (resolved from gpt-4.1; this session)" in agent.text(
        sid
    )
    await eventually(lambda: model_updates(agent, sid))
    option = model_updates(agent, sid)[-1]
    assert option["currentValue"] == "openrouter:openai/gpt-4.1"
    assert "openrouter:openai/gpt-4.1-mini" in offered(option)
    assert not [v for v in offered(option) if v.startswith(("anthropic:", "openai:"))]
    back = await agent.request(
        "session/set_config_option",
        {"sessionId": sid, "configId": "model", "value": "openrouter:openai/gpt-4.1-mini"},
    )
    assert model_option(back)["currentValue"] == "openrouter:openai/gpt-4.1-mini"


async def test_self_hosted_server_lists_its_models_and_every_switch_can_go_back(
    spawn: Any, home: Home
) -> None:
    async with SelfHosted() as server:
        home.write_config(self_hosted_config(server.url))
        agent = await spawn(initialize={})
        opened = await agent.new(home.workspace)
        sid = opened["sessionId"]
        assert model_option(opened)["currentValue"] == "openai:gpt-4.1-mini"
        assert "openai:gpt-4.1-mini" in offered(model_option(opened))
        # The server's list is fetched after the response and offered through an update.
        await eventually(
            lambda: any("openai:qwen3-coder-30b" in offered(o) for o in model_updates(agent, sid))
        )
        assert server.probes()[0].headers.get("Authorization") == "Bearer sk-self-hosted"

        assert (await agent.prompt(sid, "hello")) == {"stopReason": "end_turn"}
        assert agent.text(sid).endswith("gpt-4.1-mini says: hello")
        assert_chat(server, "hello", "gpt-4.1-mini")

        assert (await agent.prompt(sid, "/model qwen3-coder")) == {"stopReason": "end_turn"}
        assert (
            "Model switched to openai:qwen3-coder-30b (resolved from qwen3-coder; this session)"
            in agent.text(sid)
        )
        assert (await agent.prompt(sid, "second")) == {"stopReason": "end_turn"}
        assert_chat(server, "second", "qwen3-coder-30b")

        # The current model's own name is known; the picker's old value is accepted.
        assert (await agent.prompt(sid, "/model gpt-4.1-mini")) == {"stopReason": "end_turn"}
        assert "Model switched to openai:gpt-4.1-mini (this session)" in agent.text(sid)
        moved = await agent.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "openai:qwen3-coder-30b"},
        )
        assert model_option(moved)["currentValue"] == "openai:qwen3-coder-30b"
        assert "openai:gpt-4.1-mini" in offered(model_option(moved))
        back = await agent.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "openai:gpt-4.1-mini"},
        )
        assert model_option(back)["currentValue"] == "openai:gpt-4.1-mini"
        assert (await agent.prompt(sid, "third")) == {"stopReason": "end_turn"}
        assert_chat(server, "third", "gpt-4.1-mini")


async def test_a_session_whose_provider_lost_its_key_can_switch_back(spawn: Any, home: Home) -> None:
    """Stored on a provider whose key is gone: prompts ask for the key, but /model still works."""
    async with SelfHosted(served=("gpt-4.1-mini", "other-model")) as server:
        home.write_config(self_hosted_config(server.url, model="other-model"))
        first = await spawn(initialize={})
        sid = (await first.new(home.workspace))["sessionId"]
        assert (await first.prompt(sid, "/model anthropic:claude-sonnet-4-6")) == {"stopReason": "end_turn"}
        assert "ANTHROPIC_API_KEY" in first.text(sid)  # refused: no key here

        with_key = await spawn(initialize={}, env=home.env(ANTHROPIC_API_KEY="sk-ant-gone-later"))
        moved = (await with_key.new(home.workspace))["sessionId"]
        assert (await with_key.prompt(moved, "/model anthropic:claude-sonnet-4-6")) == {
            "stopReason": "end_turn"
        }
        assert "Model switched to anthropic:claude-sonnet-4-6" in with_key.text(moved)
        await with_key.request("session/close", {"sessionId": moved})

        agent = await spawn(initialize={})
        loaded = await agent.request(
            "session/load", {"sessionId": moved, "cwd": str(home.workspace), "mcpServers": []}
        )
        assert model_option(loaded)["currentValue"] == "anthropic:claude-sonnet-4-6"
        denied = await agent.error(
            "session/prompt", {"sessionId": moved, "prompt": [{"type": "text", "text": "hi"}]}
        )
        assert denied["code"] == -32000 and "ANTHROPIC_API_KEY" in denied["message"]
        assert (await agent.prompt(moved, "/model openai:other-model")) == {"stopReason": "end_turn"}
        assert "Model switched to openai:other-model (this session)" in agent.text(moved)
        assert (await agent.prompt(moved, "hi again")) == {"stopReason": "end_turn"}
        assert_chat(server, "hi again", "other-model")
