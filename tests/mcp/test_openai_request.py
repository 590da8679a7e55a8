"""An MCP tool through the ``openai`` provider against a fake upstream that checks each request:
the tool is offered under its registered name with the server's schema, and its result goes back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web

from hermes_core import ToolCompleted, TurnCompleted
from hermes_core.testing import make_kernel
from tests.mcp.helpers import stdio_server
from tests.timing import eventually


def sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


async def test_openai_request_carries_the_mcp_tool_and_its_result(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        bodies.append(await request.json())
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if len(bodies) == 1:
            call = {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "mcp_tiny_add", "arguments": '{"a": 40, "b": 2}'},
            }
            await resp.write(
                sse({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
            )
            await resp.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        else:
            await resp.write(
                sse({"choices": [{"index": 0, "delta": {"content": "it is 42"}, "finish_reason": None}]})
            )
            await resp.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    kernel = make_kernel(
        entry_points=["openai", "mcp"],
        settings={
            "model": "local:any-model",
            "providers": {"custom": [{"name": "local", "base_url": url}]},
            "mcp_servers": {"tiny": stdio_server(include=["add"])},
        },
    )
    try:
        async with kernel.running():
            await eventually(lambda: kernel.registry.tool("mcp_tiny_add"), timeout=60, what="tools")
            session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
            turn = await session.submit("add 40 and 2", owner="t")
            events = [e async for e in turn.events()]
    finally:
        await runner.cleanup()
    (done,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert (done.name, done.result_text, done.is_error) == ("mcp_tiny_add", "42", False)
    assert next(e for e in events if isinstance(e, TurnCompleted)).text == "it is 42"
    offered = {t["function"]["name"]: t["function"] for t in bodies[0]["tools"]}
    assert offered["mcp_tiny_add"]["parameters"] == {
        "type": "object",
        "properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
        "required": ["a", "b"],
        "title": "addArguments",
    }
    assert offered["mcp_tiny_add"]["description"].startswith("Add two integers.")
    assert bodies[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
