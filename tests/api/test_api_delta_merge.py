"""Deltas that reach ``hermes api`` together leave as one, through the ``openai`` provider
(docs/reference/core.md#delta-coalescing).

The fake upstream either writes a whole reply in one TCP write (the server's loop finds many
deltas already arrived: they become one event, so one run event and one chat chunk) or sends
each delta only once the client has shown the one before (nothing to merge: one each). Text
is never lost, reordered or merged across a tool call, the usage or the finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import openai
from aiohttp import web

from tests.api.api_helpers import Server, call, parse_sse
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import OPENAI, delta, usage
from tests.timing import eventually, scaled

WORDS = [f"w{i} " for i in range(60)]


def config(up: FakeUpstream, extra: str = "") -> str:
    return (
        f'model = "openai:{OPENAI.model}"\n'
        f'[providers.openai]\napi_key = "{OPENAI.key}"\nbase_url = "{OPENAI.root(up.url)}"\n' + extra
    )


def in_one_write(up: FakeUpstream, replies: list[list[bytes]]) -> None:
    """Answer the chat calls in order, each reply's frames in a single write."""
    queue = list(replies)

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(queue.pop(0)))
        await response.write_eof()
        return response

    up.on("POST", OPENAI.chat_path, handler)


def client(server: Server) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{server.base}/v1", api_key=server.key, max_retries=0, timeout=scaled(60)
    )


async def run_events(server: Server, text: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """Start a run, wait for its end and return its events ``(name, data)`` and its status."""
    started = await call(server, "POST", "/v1/runs", {"input": text})
    assert started.status == 202, started.text
    run_id = started.json["run_id"]

    async def done() -> dict[str, Any] | None:
        status = dict((await call(server, "GET", f"/v1/runs/{run_id}")).json)
        return status if status["status"] == "completed" else None

    status: dict[str, Any] = await eventually(done, timeout=scaled(30), what="the run to complete")
    reply = await call(server, "GET", f"/v1/runs/{run_id}/events")
    assert reply.status == 200, reply.text
    return [(f["data"]["event"], f["data"]) for f in parse_sse(reply.text) if "data" in f], status


async def test_deltas_that_arrive_together_leave_as_few_chunks_with_the_same_text(
    make_server: Callable[..., Server],
) -> None:
    reply = [delta(role="assistant", content=""), *(delta(content=w) for w in WORDS)]
    reply += [delta(finish_reason="stop"), usage(5, len(WORDS)), OPENAI_DONE]
    async with FakeUpstream() as up:
        in_one_write(up, [reply, reply])
        server = make_server(config(up))
        async with client(server) as api:
            stream = await api.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            chunks = [c async for c in stream]
        contents = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        assert "".join(contents) == "".join(WORDS)
        assert len(contents) <= 10, contents  # the first delta at once, the rest as they were read
        assert chunks[-1].choices[0].finish_reason == "stop"

        # Run events show every event of the turn: the merging happened before them.
        events, _ = await run_events(server, "again")
        said = [data["delta"] for name, data in events if name == "message.delta"]
        assert "".join(said) == "".join(WORDS)
        assert len(said) <= 10, said


async def test_deltas_sent_apart_are_not_merged(make_server: Callable[..., Server]) -> None:
    shown = asyncio.Queue[str]()

    async def one_at_a_time(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(delta(role="assistant", content=""))
        for word in WORDS[:12]:
            await response.write(delta(content=word))
            assert await asyncio.wait_for(shown.get(), scaled(30)) == word  # the client has it
        await response.write(delta(finish_reason="stop") + usage(5, 12) + OPENAI_DONE)
        await response.write_eof()
        return response

    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, one_at_a_time)
        server = make_server(config(up))
        contents: list[str] = []
        async with client(server) as api:
            stream = await api.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    contents.append(chunk.choices[0].delta.content)
                    shown.put_nowait(chunk.choices[0].delta.content)
        assert contents == WORDS[:12]  # one chunk per delta: nothing waited to be merged


async def test_merged_deltas_keep_their_place_around_reasoning_tool_calls_and_usage(
    make_server: Callable[..., Server],
) -> None:
    thoughts = [f"t{i} " for i in range(20)]
    call_fragments = [
        delta(
            tool_calls=[{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file"}}]
        ),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"path": "no'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": 'te.txt"}'}}]),
    ]
    first = [*(delta(reasoning_content=t) for t in thoughts), *(delta(content=w) for w in WORDS[:30])]
    first += [*call_fragments, delta(finish_reason="tool_calls"), usage(5, 50), OPENAI_DONE]
    second = [*(delta(content=w) for w in WORDS[30:]), delta(finish_reason="stop"), usage(9, 30), OPENAI_DONE]
    async with FakeUpstream() as up:
        in_one_write(up, [first, second])
        server = make_server(config(up, "[api_server]\nshow_reasoning = true\n"))
        events, status = await run_events(server, "look")
    names = [name for name, _ in events]
    reasoning = [data["delta"] for name, data in events if name == "reasoning.delta"]
    said = [data["delta"] for name, data in events if name == "message.delta"]
    assert "".join(reasoning) == "".join(thoughts) and len(reasoning) <= 5, reasoning
    assert "".join(said) == "".join(WORDS) and len(said) <= 10, said
    # Reasoning, then the first call's text, then the tool, then the second call's text.
    tool = names.index("tool.started")
    first_text = [i for i, name in enumerate(names) if name == "message.delta" and i < tool]
    assert max(i for i, name in enumerate(names) if name == "reasoning.delta") < min(first_text)
    assert "".join(events[i][1]["delta"] for i in first_text) == "".join(WORDS[:30])
    assert names.index("tool.completed") < min(
        i for i, n in enumerate(names) if n == "message.delta" and i > tool
    )
    assert names[-1] == "run.completed"
    assert status["usage"]["output_tokens"] == 80  # each call's usage, counted once
    calls = [r.body for r in up.requests if r.path == OPENAI.chat_path]
    assert len(calls) == 2
    said_before_tool = [m for m in calls[1]["messages"] if m["role"] == "assistant"]
    assert said_before_tool[0]["content"] == "".join(WORDS[:30])
    assert said_before_tool[0]["tool_calls"][0]["function"]["arguments"] == '{"path": "note.txt"}'
