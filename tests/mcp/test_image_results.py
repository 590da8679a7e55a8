"""An MCP tool that returns an image, through the ``openai`` and ``anthropic`` providers against
fake upstreams that record each request: the image reaches a model that sees images (after the
tool message for OpenAI, inside the ``tool_result`` for Anthropic), is kept with the transcript
for later turns, and becomes one line of text for a model that cannot see it."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ChatRequest, Chunk, Kernel, ToolCompleted, TurnCompleted
from hermes_core.testing import make_kernel
from tests.mcp.helpers import kernel_with, run_turn, stdio_server
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import (
    ANTHROPIC,
    block_delta,
    block_start,
    block_stop,
    delta,
    finish,
    openai_reply,
    start,
    text_reply,
)
from tests.timing import eventually

PICTURE = b"\x89PNG\r\n\x1a\ntiny-picture"  # what tiny_server's ``picture`` tool returns
DATA_URL = "data:image/png;base64," + base64.b64encode(PICTURE).decode("ascii")
NOTE = f"[image image/png, {len(PICTURE)} bytes: not shown to the model]"
SERVERS = {"tiny": stdio_server(include=["picture"])}


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


def openai_call() -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "mcp_tiny_picture", "arguments": "{}"},
    }
    return [delta(tool_calls=[call]), delta(finish_reason="tool_calls"), OPENAI_DONE]


def openai_kernel(upstream: FakeUpstream, model: dict[str, Any]) -> Kernel:
    """A custom endpoint whose ``/v1/models`` lists ``model`` (its ``vision`` flag says whether it
    takes images)."""
    upstream.json("GET", "/v1/models", {"object": "list", "data": [{"object": "model", **model}]})
    return make_kernel(
        entry_points=["openai", "mcp"],
        settings={
            "model": f"local:{model['id']}",
            "providers": {"custom": [{"name": "local", "base_url": f"{upstream.url}/v1"}]},
            "agent": {"provider_retries": 0},
            "mcp_servers": SERVERS,
        },
    )


async def two_turns(kernel: Kernel, tmp_path: Path) -> list[Any]:
    """Run ``show me`` (the model calls the tool) and ``again``; return the first turn's events."""
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_tiny_picture"), timeout=60, what="tools")
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        turn = await session.submit("show me", owner="t")
        events = [e async for e in turn.events()]
        second = await session.submit("again", owner="t")
        assert (await second.outcome).status == "complete"
    return events


async def test_openai_model_with_vision_gets_the_image_after_the_tool_message(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.replies(
        "/v1/chat/completions", [openai_call(), openai_reply("a tiny png"), openai_reply("still")]
    )
    events = await two_turns(openai_kernel(upstream, {"id": "vis-1", "vision": True}), tmp_path)
    (done,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert (done.result_text, [i.data for i in done.images]) == ("a tiny picture", [PICTURE])
    assert next(e for e in events if isinstance(e, TurnCompleted)).text == "a tiny png"
    chats = [r.body for r in upstream.requests if r.path == "/v1/chat/completions"]
    expected = [
        {"role": "tool", "tool_call_id": "call_1", "content": "a tiny picture"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by tool call call_1:"},
                {"type": "image_url", "image_url": {"url": DATA_URL}},
            ],
        },
    ]
    assert chats[1]["messages"][-2:] == expected
    # The next turn still sends the image: it was stored with the tool result.
    assert chats[2]["messages"][-4:-2] == expected
    assert chats[2]["messages"][-1] == {"role": "user", "content": "again"}


async def test_openai_upstream_refusing_images_gets_a_note_instead(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    bodies: list[dict[str, Any]] = []
    replies = [openai_call(), openai_reply("no image here"), openai_reply("ok")]

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        bodies.append(body)
        if any(m["role"] == "user" and isinstance(m["content"], list) for m in body["messages"]):
            return web.json_response({"error": {"message": "image input is not supported"}}, status=400)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in replies.pop(0):
            await response.write(frame)
        await response.write_eof()
        return response

    upstream.on("POST", "/v1/chat/completions", chat)
    events = await two_turns(openai_kernel(upstream, {"id": "text-1"}), tmp_path)
    assert next(e for e in events if isinstance(e, TurnCompleted)).text == "no image here"
    # Sent with the image once, refused, then sent again with a note in the tool message.
    assert bodies[1]["messages"][-1]["content"][1]["image_url"] == {"url": DATA_URL}
    note = {"role": "tool", "tool_call_id": "call_1", "content": f"a tiny picture\n{NOTE}"}
    assert bodies[2]["messages"][-1] == note
    assert note in bodies[-1]["messages"]
    assert not [m for m in bodies[-1]["messages"] if isinstance(m["content"], list)]


async def test_anthropic_tool_result_carries_the_image_block(upstream: FakeUpstream, tmp_path: Path) -> None:
    tool_use = [
        start(),
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "mcp_tiny_picture", "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": "{}"}),
        block_stop(0),
        *finish("tool_use", 5),
    ]
    upstream.replies("/v1/messages", [tool_use, text_reply("a tiny png"), text_reply("still")])
    kernel = make_kernel(
        entry_points=["anthropic", "mcp"],
        settings={
            "model": f"anthropic:{ANTHROPIC.model}",
            "providers": {"anthropic": {"api_key": ANTHROPIC.key, "base_url": upstream.url}},
            "agent": {"provider_retries": 0},
            "mcp_servers": SERVERS,
        },
    )
    events = await two_turns(kernel, tmp_path)
    assert next(e for e in events if isinstance(e, TurnCompleted)).text == "a tiny png"
    calls = [r.body for r in upstream.requests if r.path == "/v1/messages"]
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "a tiny picture"},
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(PICTURE).decode(),
                },
            },
        ],
    }
    assert calls[1]["messages"][-1] == {"role": "user", "content": [result]}
    assert calls[2]["messages"][-3] == {"role": "user", "content": [result]}  # kept for the next turn
    assert json.dumps(calls[2]).count("tiny-picture") == 0  # base64, never raw bytes


async def test_model_without_vision_reads_a_note_for_the_image(tmp_path: Path) -> None:
    # The mock's models are listed without vision; the requests it gets are recorded on the way.
    kernel = kernel_with(SERVERS)
    seen: list[ChatRequest] = []
    async with kernel.running():
        await eventually(lambda: kernel.registry.tool("mcp_tiny_picture"), timeout=60, what="tools")
        provider = kernel.hub.get("mock")
        real = provider.stream

        def recording(request: ChatRequest) -> AsyncIterator[Chunk]:
            seen.append(request)
            return real(request)

        provider.stream = recording  # type: ignore[method-assign]
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        events, (done,) = await run_turn(session, "[[tool mcp_tiny_picture {}]]")
        assert [i.data for i in done.images] == [PICTURE]
        completed = next(e for e in events if isinstance(e, TurnCompleted))
        assert completed.text == "Done: a tiny picture" and "images_dropped" not in completed.warnings
        (row,) = [r for r in session.rows if r.role == "tool"]
        assert (row.content, [p.data for p in row.parts]) == ("a tiny picture", [PICTURE])  # stored whole
    tool = seen[-1].messages[-1]
    assert (tool.role, tool.content, tool.parts) == ("tool", f"a tiny picture\n{NOTE}", ())
