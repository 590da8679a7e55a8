"""``run_agent.AIAgent``, the in-process facade (docs/embedding.md#the-aiagent-facade): driven through
the ``openai`` provider against a fake upstream that checks every request it gets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from run_agent import AIAgent
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream, openai_frame

KEY = "sk-test-run-agent-0123456789"
FILE_TOOLS = {"read_file", "write_file", "edit_file", "list_dir", "search"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private HERMES_HOME with no model, no key and no Hermes variables inherited."""
    import os

    for name in list(os.environ):
        if name.startswith(("HERMES_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    path = tmp_path / "home"
    path.mkdir()
    (path / "config.toml").write_text("[titles]\nrefine = false\n")
    monkeypatch.setenv("HERMES_HOME", str(path))
    yield path


def text(content: str, finish: str | None = None) -> list[bytes]:
    frames = [openai_frame({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]})]
    frames.append(openai_frame({"choices": [{"index": 0, "delta": {}, "finish_reason": finish or "stop"}]}))
    return [*frames, OPENAI_DONE]


def tool_call(name: str, arguments: dict[str, Any]) -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [
        openai_frame({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}),
        openai_frame({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        OPENAI_DONE,
    ]


def offered(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


async def test_chat_sends_the_exact_request_and_returns_the_reply(home: Path, tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        up.replies("/v1/chat/completions", [text("Hello from the fake"), text("Second answer")])
        agent = AIAgent(
            model="gpt-4.1-mini",
            provider="openai",
            base_url=f"{up.url}/v1",
            api_key=KEY,
            enabled_toolsets=["file"],
            ephemeral_system_prompt="Answer in one line.",
            cwd=tmp_path,
        )
        try:
            streamed: list[str] = []
            reply = await asyncio.to_thread(agent.chat, "hi there", streamed.append)
            assert reply == "Hello from the fake" and "".join(streamed) == reply

            # chat() starts a new conversation each time; the second request carries no history.
            assert await asyncio.to_thread(agent.chat, "again") == "Second answer"
        finally:
            await asyncio.to_thread(agent.close)
    first, second = (r for r in up.requests if r.path == "/v1/chat/completions")
    assert first.method == "POST" and first.headers["Authorization"] == f"Bearer {KEY}"
    body = first.body
    assert body["model"] == "gpt-4.1-mini"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    system, user = body["messages"]
    assert system["role"] == "system" and "Answer in one line." in system["content"]
    assert str(tmp_path) in system["content"]  # the workspace the tools work in
    assert user == {"role": "user", "content": "hi there"}
    assert offered(body) == FILE_TOOLS  # enabled_toolsets=["file"]: the file tools, nothing else
    assert [m["role"] for m in second.body["messages"]] == ["system", "user"]
    assert second.body["messages"][1] == {"role": "user", "content": "again"}


async def test_run_conversation_with_a_tool_an_approval_and_history(home: Path, tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []

    def approve(command: str, description: str) -> str:
        asked.append((command, description))
        return "once"

    async with FakeUpstream() as up:
        up.replies(
            "/v1/chat/completions",
            [
                tool_call("terminal", {"command": "echo hermes-guard-test"}),
                text("The command said hermes-guard-test."),
                text("You asked about a command."),
                text("Seeded answer."),
            ],
        )
        agent = AIAgent(
            model="openai:gpt-4.1-mini",
            base_url=f"{up.url}/v1",
            api_key=KEY,
            enabled_toolsets=["terminal"],
            approval_callback=approve,
            cwd=tmp_path,
        )
        try:
            result = await asyncio.to_thread(agent.run_conversation, "run the test command")
            follow = await asyncio.to_thread(
                agent.run_conversation, "what did I ask?", conversation_history=result["messages"]
            )
            other = await asyncio.to_thread(
                agent.run_conversation,
                "and now?",
                conversation_history=[
                    {"role": "user", "content": "earlier question"},
                    {"role": "assistant", "content": "earlier answer"},
                ],
            )
        finally:
            await asyncio.to_thread(agent.close)

    assert [c for c, _ in asked] == ["echo hermes-guard-test"] and asked[0][1]
    assert result["final_response"] == "The command said hermes-guard-test."
    assert (result["completed"], result["failed"], result["interrupted"]) == (True, False, False)
    assert result["api_calls"] == 2 and result["model"] == "openai:gpt-4.1-mini"
    assert result["provider"] == "openai"
    messages = result["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "terminal",
        "arguments": '{"command": "echo hermes-guard-test"}',
    }
    assert messages[2]["tool_call_id"] == messages[1]["tool_calls"][0]["id"]
    assert messages[2]["content"].startswith("hermes-guard-test")
    requests = [r.body for r in up.requests if r.path == "/v1/chat/completions"]
    assert offered(requests[0]) == {"terminal"}
    # The tool's result went back to the model as the OpenAI tool message.
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert requests[1]["messages"][-1]["tool_call_id"] == "call_1"

    # Passing the messages back continues the same session, tool call and result included.
    assert follow["session_id"] == result["session_id"]
    assert follow["final_response"] == "You asked about a command."
    assert [m["role"] for m in requests[2]["messages"]] == [
        "system", "user", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip
    assert follow["messages"][:4] == messages

    # Any other history seeds a new session with its texts.
    assert other["session_id"] != result["session_id"]
    assert [(m["role"], m["content"]) for m in requests[3]["messages"][1:]] == [
        ("user", "earlier question"),
        ("assistant", "earlier answer"),
        ("user", "and now?"),
    ]


async def test_without_an_approval_callback_a_guarded_command_is_denied(home: Path, tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        up.replies(
            "/v1/chat/completions",
            [tool_call("terminal", {"command": "echo hermes-guard-test"}), text("It was refused.")],
        )
        agent = AIAgent(model="openai:gpt-4.1-mini", base_url=f"{up.url}/v1", api_key=KEY, cwd=tmp_path)
        try:
            result = await asyncio.to_thread(agent.run_conversation, "run it")
        finally:
            await asyncio.to_thread(agent.close)
    assert result["final_response"] == "It was refused."
    tool = next(m for m in result["messages"] if m["role"] == "tool")
    assert "hermes-guard-test" not in tool["content"].splitlines()[0]  # it never ran
    assert "declined" in tool["content"] or "denied" in tool["content"]


async def test_a_failing_upstream_is_a_failed_result_not_an_exception(home: Path, tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        up.json("POST", "/v1/chat/completions", {"error": {"message": "bad key"}}, status=401)
        agent = AIAgent(model="openai:gpt-4.1-mini", base_url=f"{up.url}/v1", api_key=KEY, cwd=tmp_path)
        try:
            result = await asyncio.to_thread(agent.run_conversation, "hello")
        finally:
            await asyncio.to_thread(agent.close)
    assert (result["completed"], result["failed"]) == (False, True)
    assert result["final_response"] is None and "bad key" in result["error"]


def test_the_module_is_installed_and_its_example_runs(tmp_path: Path) -> None:
    """``import run_agent`` works from anywhere (the distribution ships it), with the mock model."""
    code = (
        "from run_agent import AIAgent\n"
        "with AIAgent(model='mock:echo', settings={'storage': {'backend': 'memory'}}) as agent:\n"
        "    print(agent.chat('hello'))\n"
    )
    env = {"HERMES_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello\n"


def test_beside_upstreams_hermes_agent_it_refuses_with_one_clear_error(tmp_path: Path) -> None:
    """Upstream ships ``run_agent`` and ``hermes_cli`` too: mixed, the facade says so and stops."""
    site = tmp_path / "site"
    info = site / "hermes_agent-0.19.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-agent\nVersion: 0.19.0\n\n")
    code = (
        "from run_agent import AIAgent\n"
        "try:\n"
        "    AIAgent(model='mock:echo').chat('hello')\n"
        "except RuntimeError as exc:\n"
        "    print(exc)\n"
    )
    env = {"HERMES_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"hermes-agent 0.19.0 is installed in this environment too ({site}); ")


async def test_enabled_toolsets_also_filter_the_tools_of_mcp_servers(home: Path, tmp_path: Path) -> None:
    """A configured MCP server still connecting when the call starts is waited for, so its tools
    are filtered like the others: only the named toolsets reach the model."""
    from tests.mcp.helpers import stdio_server

    async with FakeUpstream() as up:
        up.replies("/v1/chat/completions", [text("one"), text("two")])
        settings = {"mcp_servers": {"tiny": stdio_server(), "gone": {"command": str(tmp_path / "nope")}}}
        only_files = AIAgent(
            model="openai:gpt-4.1-mini", base_url=f"{up.url}/v1", api_key=KEY, cwd=tmp_path,
            enabled_toolsets=["file"], settings=settings,
        )  # fmt: skip
        try:
            result = await asyncio.to_thread(only_files.run_conversation, "hello")
        finally:
            await asyncio.to_thread(only_files.close)
        with_mcp = AIAgent(
            model="openai:gpt-4.1-mini", base_url=f"{up.url}/v1", api_key=KEY, cwd=tmp_path,
            enabled_toolsets=["mcp:tiny"], settings=settings,
        )  # fmt: skip
        try:
            await asyncio.to_thread(with_mcp.run_conversation, "hello")
        finally:
            await asyncio.to_thread(with_mcp.close)
    first, second = (r.body for r in up.requests if r.path == "/v1/chat/completions")
    assert offered(first) == FILE_TOOLS
    assert offered(second) and all(name.startswith("mcp_tiny_") for name in offered(second))
    (note,) = result["warnings"]  # the server that failed is named once
    assert note.startswith("MCP server 'gone' is not available (")
