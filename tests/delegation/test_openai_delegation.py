"""The delegation scenario through the ``openai`` provider against a fake OpenAI-compatible server
that checks the exact requests the parent and its children send."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ALL_KINDS, BackgroundCompleted, SubagentEvent, ToolCompleted, TurnCompleted
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


CHILD_DONE = web.AppKey("child_done", asyncio.Event)


async def background_chat(request: web.Request) -> web.StreamResponse:
    """The parent starts a background child, then answers only once the child has ended (so the
    child's result arrives while the parent is busy, with no tool call left in its turn)."""
    body = await request.json()
    request.app[RECEIVED].append(body)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    users = user_texts(body)
    has_tool_result = any(m["role"] == "tool" for m in body["messages"])
    if users == ["start it"] and not has_tool_result:
        args = json.dumps({"goal": "child job", "background": True})
        call = {
            "index": 0,
            "id": "call_bg",
            "type": "function",
            "function": {"name": "delegate_task", "arguments": args},
        }
        await resp.write(sse(choice({"tool_calls": [call]})))
        await resp.write(sse(choice({}, "tool_calls")))
    elif users == ["start it"]:
        await asyncio.wait_for(request.app[CHILD_DONE].wait(), 30)
        await resp.write(sse(choice({"content": "started it"})))
        await resp.write(sse(choice({}, "stop")))
    elif users == ["child job"]:
        await resp.write(sse(choice({"content": "the child found 42"})))
        await resp.write(sse(choice({}, "stop")))
    else:
        await resp.write(sse(choice({"content": "noted"})))
        await resp.write(sse(choice({}, "stop")))
    await resp.write(b"data: [DONE]\n\n")
    return resp


async def test_a_background_result_reaches_the_next_request_exactly_once(tmp_path: Path) -> None:
    app = web.Application()
    app[RECEIVED] = []
    app[CHILD_DONE] = asyncio.Event()
    app.router.add_post("/v1/chat/completions", background_chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base_url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    kernel = make_kernel(
        entry_points=["openai", "tools", "delegation"],
        settings={
            "model": "local:any-model",
            "providers": {"custom": [{"name": "local", "base_url": base_url}]},
            "agent": {"provider_retries": 0},
        },
    )
    try:
        async with kernel.running():
            parent = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
            bus = parent.subscribe()
            finished: list[BackgroundCompleted] = []

            async def watch() -> None:
                async for ev in bus:
                    if isinstance(ev, BackgroundCompleted):
                        finished.append(ev)
                        app[CHILD_DONE].set()

            watcher = asyncio.ensure_future(watch())
            first = await parent.submit("start it", owner="t")
            first_events = [ev async for ev in first.events()]
            assert (await first.outcome).status == "complete"
            for prompt in ("what came back?", "and now?"):
                await (await parent.submit(prompt, owner="t")).outcome
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            bus.close()
    finally:
        await runner.cleanup()
    # The host got the event; the steer-less turn did not swallow the result.
    [event] = finished
    assert event.status == "complete" and event.text == "the child found 42"
    [ended] = [e for e in first_events if isinstance(e, TurnCompleted)]
    assert ended.text == "started it" and ended.pending_steer is None
    by_prompt = {user_texts(b)[-1]: b for b in received_after(app[RECEIVED], "start it")}
    note = f"[delegation {event.task_id} completed] the child found 42"
    systems = {
        k: [m["content"] for m in b["messages"] if m["role"] == "system"] for k, b in by_prompt.items()
    }
    assert len(systems["what came back?"]) == 1
    assert systems["what came back?"][0].endswith(
        "\n\nBackground delegations that finished since your last turn:\n" + note
    )
    assert all(note not in text for text in systems["and now?"])
    assert all(note not in json.dumps(b) for b in app[RECEIVED] if user_texts(b)[-1] == "start it")


def received_after(received: list[dict[str, Any]], first_prompt: str) -> list[dict[str, Any]]:
    """The parent's requests for the turns after ``first_prompt`` (the child's request left out)."""
    return [b for b in received if user_texts(b)[0] == first_prompt and user_texts(b)[-1] != first_prompt]
