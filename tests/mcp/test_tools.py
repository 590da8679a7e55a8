"""MCP servers' tools in a real kernel: registration, calls over stdio and HTTP, approvals."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from hermes_core import QuestionRequested, ToolDecision
from tests.mcp.helpers import TINY, free_port, kernel_with, run_turn, stdio_server
from tests.timing import eventually


def names(kernel, prefix: str = "mcp_") -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(n for n in kernel.registry.tools if n.startswith(prefix))


async def test_stdio_server_tools_register_and_answer(tmp_path: Path) -> None:
    kernel = kernel_with({"tiny": stdio_server(exclude=["hang"])})
    async with kernel.running():
        assert kernel.tool_sources.status()[0].state in ("starting", "ready")  # start-up did not wait
        await eventually(lambda: kernel.tool_sources.status()[0].state == "ready", timeout=60, what="ready")
        assert names(kernel) == [
            "mcp_tiny_add",
            "mcp_tiny_die",
            "mcp_tiny_echo",
            "mcp_tiny_get_prompt",
            "mcp_tiny_list_prompts",
            "mcp_tiny_list_resources",
            "mcp_tiny_picture",
            "mcp_tiny_pid",
            "mcp_tiny_read_resource",
            "mcp_tiny_wait_cancel",
            "mcp_tiny_write_note",
        ]
        (status,) = kernel.tool_sources.status()
        assert (status.name, status.tools, status.transport) == ("tiny", 11, "stdio")
        spec = kernel.registry.tool("mcp_tiny_add")
        assert spec is not None and spec.kind == "read"
        assert spec.schema["properties"]["a"]["type"] == "integer" and spec.schema["required"] == ["a", "b"]
        assert kernel.registry.tool("mcp_tiny_write_note").kind == "delete"  # type: ignore[union-attr]
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        _, (done,) = await run_turn(session, '[[tool mcp_tiny_add {"a": 2, "b": 40}]]')
        assert (done.name, done.result_text, done.is_error) == ("mcp_tiny_add", "42", False)


async def test_untrusted_write_tool_asks_and_read_only_does_not(tmp_path: Path) -> None:
    kernel = kernel_with({"tiny": stdio_server(include=["echo", "write_note"])})
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_tiny_write_note"), timeout=60, what="tools")
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        asked: list[QuestionRequested] = []

        def deny(q: QuestionRequested) -> str:
            asked.append(q)
            return "deny"

        events, (done,) = await run_turn(session, '[[tool mcp_tiny_write_note {"text": "hi"}]]', deny)
        assert [q.tool_name for q in asked] == ["mcp_tiny_write_note"]
        (decision,) = [e for e in events if isinstance(e, ToolDecision)]
        assert any("untrusted" in reason for _, _, reason in decision.sources)
        assert done.is_error
        events, (done,) = await run_turn(
            session, '[[tool mcp_tiny_write_note {"text": "hi"}]]', lambda q: "once"
        )
        assert done.result_text == "wrote 2 characters" and not done.is_error
        asked.clear()
        _, (done,) = await run_turn(session, '[[tool mcp_tiny_echo {"text": "x"}]]', deny)
        assert asked == [] and done.result_text == "echo: x"


async def test_full_trust_write_tool_follows_the_profile(tmp_path: Path) -> None:
    kernel = kernel_with({"tiny": stdio_server(include=["write_note"], trust="full")})
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_tiny_write_note"), timeout=60, what="tools")
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path, profile="off")
        _, (done,) = await run_turn(session, '[[tool mcp_tiny_write_note {"text": "abc"}]]', lambda q: "deny")
        assert done.result_text == "wrote 3 characters"


async def test_streamable_http_server(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, TINY, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        kernel = kernel_with({"web": {"url": url, "headers": {"X-Test": "1"}, "connect_timeout_s": 5}})
        async with kernel.running():
            # The server may still be starting: the runner reconnects with backoff until it answers.
            await eventually(lambda: kernel.registry.tool("mcp_web_echo"), timeout=60, what="http tools")
            (status,) = kernel.tool_sources.status()
            assert (status.state, status.transport, status.tools) == ("ready", "http", 12)
            session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
            _, (done,) = await run_turn(session, '[[tool mcp_web_echo {"text": "over http"}]]')
            assert done.result_text == "echo: over http"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_bad_config_entry_is_reported_and_the_rest_load(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    kernel = kernel_with({"bad": {"command": "x", "url": "http://y"}, "tiny": stdio_server(include=["echo"])})
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_tiny_echo"), timeout=60, what="tools")
        assert [s.name for s in kernel.tool_sources.status()] == ["tiny"]
    assert "mcp_servers.bad: give either command (stdio) or url (streamable HTTP)" in caplog.text
    await asyncio.sleep(0)


async def test_resource_and_prompt_helpers(tmp_path: Path) -> None:
    kernel = kernel_with({"tiny": stdio_server(exclude=["get_prompt"])})
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_tiny_read_resource"), timeout=60, what="helpers")
        assert kernel.registry.tool("mcp_tiny_get_prompt") is None  # exclude applies to helpers too
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        script = (
            "[[tool mcp_tiny_list_resources {}]] "
            '[[tool mcp_tiny_read_resource {"uri": "note://greeting"}]] '
            "[[tool mcp_tiny_list_prompts {}]] "
            '[[tool mcp_tiny_read_resource {"uri": "note://missing"}]]'
        )
        asked: list[QuestionRequested] = []
        _, done = await run_turn(session, script, lambda q: asked.append(q) or "deny")
        assert asked == []  # helpers only read: no question even from an untrusted server
        listing, content, prompts, missing = done
        assert listing.result_text == "note://greeting — greeting (text/plain): A short text resource."
        assert content.result_text == "hello from tiny"
        assert prompts.result_text == "review (topic*): Ask for a review of a topic."
        assert missing.is_error and "note://missing" in missing.result_text


async def test_a_tool_name_taken_twice_goes_to_the_server_listed_first(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    # "a.b" and "a_b" sanitise alike: both servers' echo would be mcp_a_b_echo. "a.b" is listed
    # first but is held back until "a_b" is ready, so it connects last and must still win.
    gate = tmp_path / "open"
    kernel = kernel_with(
        {
            "a.b": stdio_server(include=["echo"], env={"TINY_WAIT_FOR": str(gate)}),
            "a_b": stdio_server(include=["echo", "add"]),
        }
    )
    async with kernel.running():

        def state() -> dict[str, str]:
            return {s.name: s.state for s in kernel.tool_sources.status()}

        await eventually(lambda: state()["a_b"] == "ready", timeout=60, what="a_b ready")
        assert state()["a.b"] == "starting"
        spec = kernel.registry.tool("mcp_a_b_echo")
        assert spec is not None and "(MCP server a_b, tool echo)" in spec.description  # for now
        gate.write_text("")
        await eventually(lambda: state()["a.b"] == "ready", timeout=60, what="a.b ready")
        spec = kernel.registry.tool("mcp_a_b_echo")
        assert spec is not None and "(MCP server a.b, tool echo)" in spec.description
        assert kernel.registry.tool("mcp_a_b_add") is not None
        by_name = {s.name: s for s in kernel.tool_sources.status()}
        assert (by_name["a.b"].tools, by_name["a.b"].left_out) == (1, ())
        assert (by_name["a_b"].tools, by_name["a_b"].left_out) == (1, ("mcp_a_b_echo",))
        assert by_name["a_b"].as_dict()["left_out"] == ["mcp_a_b_echo"]
        # The model sees the winner's tool: a call runs on "a.b".
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        _, done = await run_turn(session, '[[tool mcp_a_b_echo {"text": "hi"}]]')
        assert done[0].result_text == "echo: hi"
        assert kernel.tool_sources.get("mcp").server_of("mcp_a_b_echo", session.id) == "a.b"  # type: ignore[attr-defined]
    assert (
        "MCP server a_b: tool mcp_a_b_echo left out: the name is taken by MCP server 'a.b', listed before it"
        in caplog.text
    )


async def test_a_name_goes_back_to_the_next_server_when_its_holder_stops(tmp_path: Path) -> None:
    kernel = kernel_with({"a.b": stdio_server(include=["echo"]), "a_b": stdio_server(include=["echo"])})
    async with kernel.running():
        await eventually(
            lambda: all(s.state == "ready" for s in kernel.tool_sources.status()), timeout=60, what="ready"
        )
        spec = kernel.registry.tool("mcp_a_b_echo")
        assert spec is not None and "(MCP server a.b, tool echo)" in spec.description
        manager = kernel.tool_sources.get("mcp")
        await manager.configured["a.b"].stop()  # type: ignore[attr-defined]
        spec = kernel.registry.tool("mcp_a_b_echo")
        assert spec is not None and "(MCP server a_b, tool echo)" in spec.description
        by_name = {s.name: s for s in kernel.tool_sources.status()}
        assert (by_name["a_b"].tools, by_name["a_b"].left_out) == (1, ())


async def test_a_configured_server_keeps_a_name_from_a_sessions_server(tmp_path: Path) -> None:
    # The configured "a.b" connects after the session's own "a_b": the configured one still wins.
    gate = tmp_path / "open"
    kernel = kernel_with({"a.b": stdio_server(include=["echo"], env={"TINY_WAIT_FOR": str(gate)})})
    entry = {"name": "a_b", "command": stdio_server()["command"], "args": stdio_server()["args"], "env": []}
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        await kernel.tool_sources.attach("mcp", session.id, [entry])

        def holder() -> str:
            spec = kernel.registry.tool("mcp_a_b_echo", session.id)
            return spec.description.rsplit("(", 1)[1] if spec is not None else ""

        await eventually(lambda: holder() == "MCP server a_b, tool echo)", timeout=60, what="session's tool")
        gate.write_text("")
        await eventually(lambda: holder() == "MCP server a.b, tool echo)", timeout=60, what="configured wins")
        statuses = {s.name: s for s in kernel.tool_sources.status(session.id)}
        assert statuses["a_b"].left_out == ("mcp_a_b_echo",) and statuses["a.b"].left_out == ()
