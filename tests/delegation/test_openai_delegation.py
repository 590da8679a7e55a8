"""The delegation scenario through the ``openai`` provider against a fake OpenAI-compatible server
that checks the exact requests the parent and its children send."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ALL_KINDS, SubagentEvent, ToolCompleted
from hermes_core.testing import make_kernel

RECEIVED = web.AppKey("received", list)


def sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def chat(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    request.app[RECEIVED].append(body)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    users = user_texts(body)
    has_tool_result = any(m["role"] == "tool" for m in body["messages"])
    if users == ["plan the release"] and not has_tool_result:
        args = json.dumps(
            {"tasks": [{"goal": "check alpha"}, {"goal": "check beta", "context": "only docs"}]}
        )
        call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "delegate_task", "arguments": args},
        }
        await resp.write(sse(choice({"tool_calls": [call]})))
        await resp.write(sse(choice({}, "tool_calls")))
    elif users == ["plan the release"]:
        await resp.write(sse(choice({"content": "both checked"})))
        await resp.write(sse(choice({}, "stop")))
    else:
        await resp.write(sse(choice({"content": f"ok: {users[0].splitlines()[0]}"})))
        await resp.write(sse(choice({}, "stop")))
    await resp.write(
        sse({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
    )
    await resp.write(b"data: [DONE]\n\n")
    return resp


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
    app = web.Application()
    app[RECEIVED] = []
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield app[RECEIVED], f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


async def test_a_batch_through_the_openai_provider(
    upstream: tuple[list[dict[str, Any]], str], tmp_path: Path
) -> None:
    received, base_url = upstream
    kernel = make_kernel(
        entry_points=["openai", "tools", "delegation"],
        settings={
            "model": "local:any-model",
            "providers": {"custom": [{"name": "local", "base_url": base_url}]},
            "agent": {"provider_retries": 0},
        },
    )
    async with kernel.running():
        parent = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
        turn = await parent.submit("plan the release", owner="t", answerable=ALL_KINDS)
        events = [ev async for ev in turn.events()]
        outcome = await turn.outcome
    assert outcome.status == "complete"
    assert [e.text for e in events if type(e).__name__ == "TurnCompleted"] == ["both checked"]
    [done] = [e for e in events if isinstance(e, ToolCompleted)]
    res = json.loads(done.result_text)["results"]
    assert [(r["status"], r["summary"]) for r in res] == [
        ("completed", "ok: check alpha"),
        ("completed", "ok: check beta"),
    ]
    assert [r["tokens"] for r in res] == [{"input": 10, "output": 2}] * 2
    assert {e.model for e in events if isinstance(e, SubagentEvent)} == {"local:any-model"}
    # Exactly four requests: the parent's two and one per child.
    assert len(received) == 4
    parent_first, *children, parent_last = received
    assert user_texts(parent_first) == ["plan the release"]
    parent_tools = {t["function"]["name"] for t in parent_first["tools"]}
    assert {"delegate_task", "clarify", "request_secret"} <= parent_tools
    assert sorted(user_texts(c)[0] for c in children) == ["check alpha", "check beta\n\nContext:\nonly docs"]
    for child in children:
        assert child["model"] == "any-model" and child["stream"] is True
        # A fresh conversation: the child never sees the parent's messages.
        assert [m["role"] for m in child["messages"] if m["role"] != "system"] == ["user"]
        names = {t["function"]["name"] for t in child.get("tools", [])}
        assert names and not names & {"delegate_task", "clarify", "request_secret"}
        assert names <= parent_tools
    tool_msgs = [m for m in parent_last["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_1"]
    assert json.loads(tool_msgs[0]["content"])["results"][1]["summary"] == "ok: check beta"
    assert parent.usage.calls == 4
