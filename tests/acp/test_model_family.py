"""``/model claude-sonnet-4`` over ACP: resolved to the newest Claude id, said so, then used."""

from __future__ import annotations

from typing import Any

from hermes_anthropic.catalog import CLAUDE_MODELS
from hermes_core.model_family import newest
from tests.acp.conftest import Home
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import text_reply


async def test_seed_model_command_resolves_and_the_next_turn_uses_it(spawn: Any, home: Home) -> None:
    expected, _ = newest("claude-sonnet-4", [m.id for m in CLAUDE_MODELS])
    async with FakeUpstream() as upstream:
        upstream.stream("/v1/messages", text_reply("claude here"))
        home.config["providers"] = {"anthropic": {"base_url": upstream.url, "api_key": "sk-ant-x"}}
        home.write_config()
        agent = await spawn(initialize={})
        sid = (await agent.new(home.workspace))["sessionId"]
        assert (await agent.prompt(sid, "/model claude-sonnet-4")) == {"stopReason": "end_turn"}
        assert (
            f"Model switched to anthropic:{expected} (resolved from claude-sonnet-4; this session)"
            in agent.text(sid)
        )
        before = len(agent.text(sid))
        assert (await agent.prompt(sid, "hello")) == {"stopReason": "end_turn"}
        assert agent.text(sid)[before:] == "claude here"
        assert upstream.last().body["model"] == expected
