"""The span tree of a turn through the ``openai`` provider (docs/observability.md#spans): a turn
with two tools, one of them a delegated child, against a fake OpenAI-compatible server; spans and
GenAI metrics read back from the SDK's in-memory exporters."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ALL_KINDS, QuestionRequested
from hermes_core.testing import make_kernel
from tests.otel.conftest import Telemetry

RECEIVED = web.AppKey("received", list)
CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID = int("0af7651916cd43dd8448eb211c80319c", 16)


def sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def call(index: int, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


async def chat(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    request.app[RECEIVED].append(body)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    done_tools = any(m["role"] == "tool" for m in body["messages"])
    if users[0] == "look around" and not done_tools:
        calls = [
            call(0, "call_read", "read_file", {"path": "notes.txt"}),
            call(1, "call_child", "delegate_task", {"tasks": [{"goal": "check alpha"}]}),
        ]
        await resp.write(sse({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}))
        finish = "tool_calls"
    elif users[0] == "run it" and not done_tools:
        calls = [call(0, "call_write", "write_file", {"path": "out.txt", "content": "traced words"})]
        await resp.write(sse({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}))
        finish = "tool_calls"
    else:
        text = "all done" if users[0] in ("look around", "run it") else "alpha is fine"
        await resp.write(sse({"choices": [{"index": 0, "delta": {"content": text}}]}))
        finish = "stop"
    await resp.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    await resp.write(sse({"choices": [], "usage": usage}))
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
    yield app[RECEIVED], f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()


def kernel_for(base_url: str, **otel: Any) -> Any:
    settings: dict[str, Any] = {
        "model": "local:any-model",
        "providers": {"custom": [{"name": "local", "base_url": base_url}]},
        "agent": {"provider_retries": 0},
    }
    if otel:
        settings["otel"] = otel
    return make_kernel(entry_points=["openai", "tools", "delegation", "otel"], settings=settings)


def token_sums(otel: Telemetry) -> dict[str, int]:
    """The cumulative token counts by type (the metrics outlive each test)."""
    sums: dict[str, int] = {}
    for point in otel.points("gen_ai.client.token.usage"):
        kind = point.attributes["gen_ai.token.type"]
        sums[kind] = sums.get(kind, 0) + int(point.sum)
    return sums


def children(spans: list[Any], parent: Any) -> list[Any]:
    return sorted(
        (s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id),
        key=lambda s: s.start_time,
    )


async def test_a_turn_with_two_tools_and_a_child_is_one_tree(
    otel: Telemetry, upstream: tuple[list[dict[str, Any]], str], tmp_path: Path
) -> None:
    received, base_url = upstream
    (tmp_path / "notes.txt").write_text("secret plans\n", encoding="utf-8")
    kernel = kernel_for(base_url, enabled="global")
    before = token_sums(otel)
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
        turn = await session.submit("look around", owner="t", answerable=ALL_KINDS, traceparent=CALLER)
        outcome = await turn.outcome
        assert outcome.status == "complete"
    assert len(received) == 3  # the parent's two calls and the child's one
    spans = otel.finished()
    [root] = [s for s in spans if s.attributes.get("gen_ai.agent.id") == session.id]
    # The turn continues the caller's trace, under the caller's span.
    assert root.name == "invoke_agent hermes"
    assert root.context.trace_id == TRACE_ID
    assert root.parent is not None and root.parent.span_id == int("b7ad6b7169203331", 16)
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["hermes.turn.status"] == "complete"
    assert root.attributes["gen_ai.usage.input_tokens"] == 20  # two calls of 10
    names = [s.name for s in children(spans, root)]
    tools = ["execute_tool read_file", "execute_tool delegate_task"]
    assert names == ["chat any-model", *tools, "chat any-model"]
    first_call = children(spans, root)[0]
    assert first_call.kind.name == "CLIENT"
    assert first_call.attributes["gen_ai.provider.name"] == "local"
    assert first_call.attributes["gen_ai.usage.output_tokens"] == 2
    assert first_call.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    delegate = children(spans, root)[2]
    assert delegate.attributes["gen_ai.tool.call.id"] == "call_child"
    # The child agent is a nested invoke_agent under the delegating tool call, with its own call.
    [child] = children(spans, delegate)
    assert child.name == "invoke_agent hermes"
    assert child.attributes["gen_ai.agent.id"] != session.id
    assert child.attributes["hermes.agent.depth"] == 1
    assert [s.name for s in children(spans, child)] == ["chat any-model"]
    assert {s.context.trace_id for s in spans} == {TRACE_ID}
    # No message content without the capture switch.
    recorded = json.dumps([dict(s.attributes) for s in spans])
    assert "secret plans" not in recorded and "alpha is fine" not in recorded
    # GenAI metrics.
    after = token_sums(otel)
    assert {k: after[k] - before.get(k, 0) for k in after} == {"input": 30, "output": 6}  # three calls
    tools = {p.attributes["gen_ai.tool.name"] for p in otel.points("gen_ai.execute_tool.duration")}
    assert {"read_file", "delegate_task"} <= tools
    assert otel.points("gen_ai.client.operation.duration")


async def test_an_approval_is_an_event_on_its_tool_span_and_content_is_opt_in(
    otel: Telemetry,
    upstream: tuple[list[dict[str, Any]], str],
    tmp_path: Path,
) -> None:
    _, base_url = upstream
    kernel = kernel_for(base_url, enabled="global", capture_content=True)
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=tmp_path, profile="default")
        turn = await session.submit("run it", owner="t", answerable=ALL_KINDS)
        asked = 0
        async for event in turn.events():
            if isinstance(event, QuestionRequested) and event.kind == "approval":
                asked += 1
                assert kernel.answer(event.request_id, "once") == "ok"
        assert (await turn.outcome).status == "complete"
    assert asked == 1 and (tmp_path / "out.txt").read_text(encoding="utf-8") == "traced words"
    spans = otel.finished()
    [tool] = [s for s in spans if s.name == "execute_tool write_file"]
    assert [e.name for e in tool.events] == ["hermes.question.requested", "hermes.question.closed"]
    assert tool.events[1].attributes["hermes.question.choice"] == "once"
    assert "traced words" in tool.attributes["gen_ai.tool.call.arguments"]
    assert "out.txt" in tool.attributes["gen_ai.tool.call.result"]
    [root] = [s for s in spans if s.name == "invoke_agent hermes"]
    assert root.parent is None  # no caller: a new trace
    assert root.attributes["hermes.output.text"] == "all done"


async def test_a_malformed_traceparent_starts_a_new_trace(
    otel: Telemetry, upstream: tuple[list[dict[str, Any]], str], tmp_path: Path
) -> None:
    _, base_url = upstream
    kernel = kernel_for(base_url, enabled="global")
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
        turn = await session.submit("hello", owner="t", traceparent="00-nothex-zz-01")
        assert (await turn.outcome).status == "complete"
    [root] = [s for s in otel.finished() if s.name == "invoke_agent hermes"]
    assert root.parent is None


async def test_without_the_switch_nothing_is_traced(
    upstream: tuple[list[dict[str, Any]], str], tmp_path: Path
) -> None:
    _, base_url = upstream
    kernel = kernel_for(base_url)
    async with kernel.running():
        assert kernel.tracer is None
        session = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
        turn = await session.submit("hello", owner="t")
        assert (await turn.outcome).status == "complete"
