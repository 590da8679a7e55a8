"""Checklist group D (prompt turns, docs/reference/acp.md#prompt-turns) and the slash commands of H #37
(docs/reference/acp.md#slash-commands)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from tests.acp.conftest import Home
from tests.acp.helpers import calls, final, of_kind, tool
from tests.timing import eventually


async def test_text_and_reasoning_chunks(spawn: Any, home: Home) -> None:
    """#19: chunks share one messageId per message; reasoning uses another."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.prompt(sid, "[[reason thinking hard]] hello world")) == {"stopReason": "end_turn"}
    text = of_kind(agent.updates(sid), "agent_message_chunk")
    thought = of_kind(agent.updates(sid), "agent_thought_chunk")
    assert len({u["messageId"] for u in text}) == 1
    assert len({u["messageId"] for u in thought}) == 1
    assert text[0]["messageId"] != thought[0]["messageId"]
    assert "".join(u["content"]["text"] for u in thought) == "thinking hard"
    assert agent.text(sid) == "You said: hello world"


async def test_queued_deltas_leave_as_fewer_chunks_with_the_same_text(spawn: Any, home: Home) -> None:
    """Deltas already queued merge into one chunk each; the text, its order and messageIds hold."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    count = 3000
    prompt = f"[[reason thinking hard about it]] [[tokens {count}]]"
    assert (await agent.prompt(sid, prompt)) == {"stopReason": "end_turn"}
    kinds = [u["sessionUpdate"] for u in agent.updates(sid)]
    text = of_kind(agent.updates(sid), "agent_message_chunk")
    thought = of_kind(agent.updates(sid), "agent_thought_chunk")
    assert agent.text(sid) == " ".join(f"t{i}" for i in range(count))
    assert "".join(u["content"]["text"] for u in thought) == "thinking hard about it"
    # Reasoning streams first and never interleaves with the text after it.
    assert kinds.index("agent_message_chunk") > max(
        i for i, k in enumerate(kinds) if k == "agent_thought_chunk"
    )
    assert len({u["messageId"] for u in text}) == 1
    assert all(u["content"]["text"] for u in text + thought)
    # The mock yields its 3000 deltas faster than one wake-up each: they must not cost a frame each.
    assert len(text) < count // 2, len(text)


async def test_bad_prompts(spawn: Any, home: Home) -> None:
    """#21: unknown session → -32002; image, empty and blank prompts → -32602."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    error = await agent.error(
        "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}
    )
    assert error["code"] == -32002
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    for prompt in ([image], [], [{"type": "text", "text": "   \n"}]):
        error = await agent.error("session/prompt", {"sessionId": sid, "prompt": prompt})
        assert error["code"] == -32602, prompt
    assert (await agent.prompt(sid, "still fine"))["stopReason"] == "end_turn"


async def test_errors_and_caps(spawn: Any, home: Home) -> None:
    """#23: [[error]] → -32603 then end_turn; a round cap → max_turn_requests."""
    home.config["agent"] = {"max_tool_rounds": 1}
    home.write_config()
    (home.workspace / "a.txt").write_text("a\n")
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    error = await agent.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "[[error boom]]"}]}
    )
    assert error["code"] == -32603 and "boom" in error["message"]
    assert error["data"]["kind"] == "upstream"
    assert (await agent.prompt(sid, "ok now"))["stopReason"] == "end_turn"
    result = await agent.prompt(sid, "[[rounds 2]] " + tool("read_file", path="a.txt"))
    assert result == {"stopReason": "max_turn_requests"}
    for events in calls(agent.updates(sid)).values():
        final(events)


async def test_provider_401_answers_auth_required(spawn: Any, home: Home) -> None:
    """#23: a 401 from an OpenAI-compatible server → -32000."""

    async def chat(request: web.Request) -> web.Response:
        return web.json_response(
            {"error": {"message": "bad key", "type": "invalid_request_error"}}, status=401
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        home.config = {
            "model": "openai:gpt-4.1",
            "providers": {"openai": {"base_url": f"http://127.0.0.1:{port}/v1", "api_key": "sk-test"}},
        }
        home.write_config()
        agent = await spawn(initialize={})
        sid = (await agent.new(home.workspace))["sessionId"]
        error = await agent.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        assert error["code"] == -32000
    finally:
        await runner.cleanup()


async def test_first_turn_sends_title_and_usage_and_todo_plan(spawn: Any, home: Home) -> None:
    """#24: session_info_update (first six words) and usage_update before the response; plan."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    await agent.prompt(sid, "one two three four five six seven eight")
    info = of_kind(agent.updates(sid), "session_info_update")
    assert info and info[0]["title"] == "one two three four five six"
    usage = of_kind(agent.updates(sid), "usage_update")
    assert usage and isinstance(usage[-1]["used"], int) and usage[-1]["used"] <= usage[-1]["size"] == 32768
    todos = [
        {"id": "1", "content": "first", "status": "completed", "priority": "high"},
        {"id": "2", "content": "second", "status": "cancelled", "priority": "low"},
        {"id": "3", "content": "third", "status": "in_progress"},
    ]
    await agent.prompt(sid, tool("todo", todos=todos))
    plan = of_kind(agent.updates(sid), "plan")[-1]
    assert plan["entries"] == [
        {"content": "first", "priority": "high", "status": "completed"},
        {"content": "[cancelled] second", "priority": "low", "status": "completed"},
        {"content": "third", "priority": "medium", "status": "in_progress"},
    ]


async def test_slash_commands(spawn: Any, home: Home) -> None:
    """#37: /model switches inside the turn without a model call; unknown /words reach the model."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.settle()
    commands = of_kind(agent.updates(sid), "available_commands_update")[-1]["availableCommands"]
    assert "model" in [c["name"] for c in commands]
    assert (await agent.prompt(sid, "/model mock:alt")) == {"stopReason": "end_turn"}
    updates = agent.updates(sid)
    assert of_kind(updates, "config_option_update")
    assert "mock:alt" in agent.text(sid) and "You said" not in agent.text(sid)
    option = of_kind(updates, "config_option_update")[-1]["configOptions"][1]
    assert option["currentValue"] == "mock:alt"
    before = len(agent.text(sid))
    await agent.prompt(sid, "hello")
    assert agent.text(sid)[before:].startswith("alt: ")
    before = len(agent.text(sid))
    await agent.prompt(sid, "/model nope-such-model")
    assert agent.text(sid)[before:]
    result = await agent.request(
        "session/resume", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
    )
    assert result["models"]["currentModelId"] == "mock:alt"
    before = len(agent.text(sid))
    await agent.prompt(sid, "/notacommand hi")
    assert "/notacommand hi" in agent.text(sid)[before:]
    before = len(agent.text(sid))
    assert (await agent.prompt(sid, "/stop")) == {"stopReason": "end_turn"}
    assert "not available" in agent.text(sid)[before:]


async def test_without_model_switch_plugin(spawn: Any, home: Home) -> None:
    """#37: with model-switch disabled, /model is not advertised and the option still works."""
    agent = await spawn(env=home.env(HERMES_DISABLE_PLUGINS="model-switch"), initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.settle()
    commands = of_kind(agent.updates(sid), "available_commands_update")[-1]["availableCommands"]
    assert "model" not in [c["name"] for c in commands]
    result = await agent.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "mock:alt"}
    )
    assert result["configOptions"][1]["currentValue"] == "mock:alt"
    await agent.prompt(sid, "hey")
    assert agent.text(sid).startswith("alt: ")


async def test_sessions_run_concurrently(spawn: Any, home: Home) -> None:
    """docs/reference/acp.md#one-turn-at-a-time: different sessions run at the same time."""
    agent = await spawn(initialize={})
    a = (await agent.new(home.workspace))["sessionId"]
    b = (await agent.new(home.workspace))["sessionId"]
    results = await asyncio.wait_for(
        asyncio.gather(
            agent.prompt(a, "[[delay 50]] [[tokens 10]]"), agent.prompt(b, "[[delay 50]] [[tokens 10]]")
        ),
        5,
    )
    assert [r["stopReason"] for r in results] == ["end_turn", "end_turn"]
    assert json.dumps(agent.text(a)) == json.dumps(agent.text(b))


async def test_refined_title_after_the_response(spawn: Any, home: Home) -> None:
    """docs/reference/acp.md#end-of-a-turn: a title refined after the response is sent as another
    session_info_update."""
    home.config["titles"] = {"refine": True}
    home.write_config()
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(sid, "[[title Better Name]] please help me")

    def titles() -> list[str]:
        return [u["title"] for u in of_kind(agent.updates(sid), "session_info_update")]

    await eventually(lambda: "Better Name" in titles(), what="the refined title")
    assert len(titles()) >= 2 and titles()[-1] == "Better Name"


async def test_resource_links_inside_and_outside_the_workspace(spawn: Any, home: Home, tmp_path: Any) -> None:
    """docs/reference/acp.md#prompt-content: a file:// link inside the workspace is read as context; outside,
    it stays a link."""
    (home.workspace / "notes.txt").write_text("inside secret-less text")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside text")
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    prompt = [
        {"type": "text", "text": "look"},
        {"type": "resource_link", "uri": (home.workspace / "notes.txt").as_uri(), "name": "notes"},
        {"type": "resource_link", "uri": outside.as_uri(), "name": "outside"},
    ]
    result = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert result["stopReason"] == "end_turn"
    text = agent.text(sid)
    assert "inside secret-less text" in text
    assert "outside text" not in text and outside.as_uri() in text


async def test_retry_runs_the_last_prompt_again(spawn: Any, home: Home) -> None:
    """/retry archives the last turn and runs its text again as this prompt's turn."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.settle()
    await agent.prompt(sid, "first question")
    before = len(agent.text(sid))
    assert (await agent.prompt(sid, "/retry")) == {"stopReason": "end_turn"}
    assert "You said: first question" in agent.text(sid)[before:]
