"""Steer, an approval dialog, abort and ``set_auto_retry`` through the ``openai`` provider.

The fake OpenAI-compatible upstream on loopback checks what each pi command changes in the
requests the core sends: the steering text rides on the tool result of the next request, a
denied approval is what the model reads back, an abort closes the upstream's stream, and with
auto-retry off a rate limit is asked once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.pi.client import PiProcess
from tests.pi.test_openai_upstream import (
    PATH,
    Spawn,
    blocking,
    configure,
    start,
    stream,
    tool_call_reply,
)
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import delta, openai_reply
from tests.timing import eventually, scaled

GUARDED = "echo hermes-guard-test"


def _answer(pi: PiProcess, start_at: int, value: str) -> dict[str, Any]:
    """Answer the first dialog after ``start_at`` with ``value``; return its request."""
    (request,) = pi.wait_type("extension_ui_request", 1, start_at)
    pi.send({"type": "extension_ui_response", "id": request["id"], "value": value})
    return request


async def test_steer_and_a_denied_approval_reach_the_next_request(spawn: Spawn, home: Path) -> None:
    async with gated_upstream() as (up, gate):
        configure(home, up.url)
        pi = await start(spawn)
        start_at = pi.mark()
        assert await blocking(pi.call, "prompt", message="run the check") == {"disposition": "started"}
        await eventually(lambda: len(up.requests) == 1, timeout=20, what="the first model call")
        assert await blocking(pi.call, "steer", message="keep it short") == {"disposition": "queued"}
        assert pi.of_type("queue_update", start_at)[-1] == {
            "type": "queue_update",
            "steering": ["keep it short"],
            "followUp": [],
        }
        gate.set()  # the first call now answers with the guarded tool call
        request = await blocking(_answer, pi, start_at, "Deny")
        assert request["method"] == "select" and GUARDED in request["title"]
        await blocking(pi.wait_type, "agent_settled", 1, start_at)

        first, second = (r.body for r in up.requests)
        assert first["messages"][-1] == {"role": "user", "content": "run the check"}
        assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "terminal"
        result = second["messages"][-1]
        assert result["role"] == "tool" and result["tool_call_id"] == "call_1"
        assert "declined" in result["content"].lower()
        assert result["content"].endswith("[User guidance] keep it short")
        assert not any(
            m["role"] == "user" and "keep it short" in str(m["content"]) for m in second["messages"]
        )
        ends = pi.of_type("tool_execution_end", start_at)
        assert [(e["toolName"], e["isError"]) for e in ends] == [("terminal", True)]
        assert pi.of_type("queue_update", start_at)[-1]["steering"] == []
        assert pi.of_type("agent_settled", start_at) == [{"type": "agent_settled", "aborted": False}]
        await blocking(pi.close)


async def test_abort_closes_the_upstream_stream_and_the_session_goes_on(spawn: Spawn, home: Path) -> None:
    async with gated_upstream() as (up, _gate):
        closed = asyncio.Event()
        calls: list[int] = []

        async def handler(request: web.Request) -> web.StreamResponse:
            calls.append(1)
            if len(calls) > 1:
                return await stream(request, openai_reply("fresh start"))
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(delta(content="partial "))
            while request.transport is not None and not request.transport.is_closing():
                await asyncio.sleep(0.02)  # until the client hangs up
            closed.set()
            return response

        up.on("POST", PATH, handler)
        configure(home, up.url)
        pi = await start(spawn)
        start_at = pi.mark()
        await blocking(pi.call, "prompt", message="talk a lot")
        await blocking(
            pi.wait,
            lambda: any(
                r.get("assistantMessageEvent", {}).get("type") == "text_delta"
                for r in pi.of_type("message_update", start_at)
            ),
            20,
            "the first delta",
        )
        await blocking(pi.call, "abort")  # answered once the run has settled
        assert pi.of_type("agent_settled", start_at) == [{"type": "agent_settled", "aborted": True}]
        last = [r["message"] for r in pi.of_type("message_end", start_at)][-1]
        assert last["stopReason"] == "aborted" and last["content"] == [{"type": "text", "text": "partial "}]
        await asyncio.wait_for(closed.wait(), scaled(10))

        records = await blocking(pi.prompt_and_wait, "again")
        assert [r["type"] for r in records].count("agent_settled") == 1
        again = up.requests[-1].body["messages"]
        assert again[-1] == {"role": "user", "content": "again"}
        assert next(m["content"] for m in again if m["role"] == "user") == "talk a lot"
        await blocking(pi.close)


async def test_with_auto_retry_off_a_rate_limit_is_asked_once(spawn: Spawn, home: Path) -> None:
    async with gated_upstream() as (up, _gate):

        async def handler(request: web.Request) -> web.StreamResponse:
            error = {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}
            return web.json_response(error, status=429, headers={"Retry-After": "0"})

        up.on("POST", PATH, handler)
        configure(home, up.url)
        (home / "config.toml").write_text(
            (home / "config.toml").read_text().replace("provider_retries = 0", "provider_retries = 3")
        )
        pi = await start(spawn)
        await blocking(pi.call, "set_auto_retry", enabled=False)
        records = await blocking(pi.prompt_and_wait, "hello")
        assert len(up.requests) == 1
        assert not [r for r in records if r["type"].startswith("auto_retry")]
        last = [r["message"] for r in records if r["type"] == "message_end"][-1]
        assert last["stopReason"] == "error" and "slow down" in last["errorMessage"]

        await blocking(pi.call, "set_auto_retry", enabled=True)
        start_at = pi.mark()
        await blocking(pi.call, "prompt", message="once more")
        await blocking(pi.wait_type, "auto_retry_start", 1, start_at)
        assert len(up.requests) >= 2
        await blocking(pi.call, "abort")
        await blocking(pi.close)


@asynccontextmanager
async def gated_upstream() -> AsyncIterator[tuple[FakeUpstream, asyncio.Event]]:
    """A fake upstream whose first call waits for the gate and then asks for the guarded tool;
    later calls answer ``understood``. A test may replace the route."""
    async with FakeUpstream() as up:
        gate = asyncio.Event()
        served: list[int] = []

        async def handler(request: web.Request) -> web.StreamResponse:
            served.append(1)
            if len(served) == 1:
                await gate.wait()
                return await stream(request, tool_call_reply("terminal", {"command": GUARDED}))
            return await stream(request, openai_reply("understood"))

        up.on("POST", PATH, handler)
        yield up, gate


async def test_automatic_compaction_asks_the_upstream_for_the_summary(spawn: Spawn, home: Path) -> None:
    async with FakeUpstream() as up:
        summaries: list[dict[str, Any]] = []

        async def handler(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            if "compress conversations" in str(body["messages"][0]):
                summaries.append(body)
                return await stream(request, openai_reply("Auto summary."))
            return await stream(request, openai_reply("word " * 3000))

        up.on("POST", PATH, handler)
        window = 'models = [{ id = "gpt-test", context_window = 6000 }]\n'
        configure(home, up.url, window + "[compression]\nauto_threshold = 0.5\n")
        pi = await start(spawn)
        await blocking(pi.call, "set_auto_compaction", enabled=False)
        await blocking(pi.prompt_and_wait, "one")
        records = await blocking(pi.prompt_and_wait, "two")
        assert not summaries and not [r for r in records if "compaction" in r["type"]]

        await blocking(pi.call, "set_auto_compaction", enabled=True)
        records = await blocking(pi.prompt_and_wait, "three")
        assert len(summaries) == 1 and "one" in str(summaries[0]["messages"])
        kinds = [r["type"] for r in records if "compaction" in r["type"]]
        assert kinds == ["compaction_start", "auto_compaction_start", "compaction_end", "auto_compaction_end"]
        end = next(r for r in records if r["type"] == "compaction_end")
        assert end["reason"] == "threshold" and end["result"]["summary"] == "Auto summary."
        turn = up.requests[-1].body["messages"]
        assert "Auto summary." in str(turn) and turn[-1] == {"role": "user", "content": "three"}
        assert not any(m["content"] == "one" for m in turn if m["role"] == "user")
        await blocking(pi.close)


async def test_cycle_model_and_fork_shape_the_next_request(spawn: Spawn, home: Path) -> None:
    async with FakeUpstream() as up:
        up.replies(PATH, [openai_reply(f"answer {n}") for n in range(4)])
        configure(home, up.url, 'models = ["gpt-test", "gpt-two"]\n')
        pi = await start(spawn)
        for text in ("one", "two"):
            await blocking(pi.prompt_and_wait, text)
        cycled = await blocking(pi.call, "cycle_model")
        assert cycled["model"]["provider"] == "openai" and cycled["model"]["id"] != "gpt-test"
        forks = (await blocking(pi.call, "get_fork_messages"))["messages"]
        assert [m["text"] for m in forks] == ["one", "two"]
        assert (await blocking(pi.call, "fork", entryId=forks[1]["entryId"]))["text"] == "two"
        await blocking(pi.prompt_and_wait, "three")
        body = up.requests[-1].body
        assert body["model"] == cycled["model"]["id"]
        assert [m["content"] for m in body["messages"] if m["role"] == "user"] == ["one", "three"]
        assert [m["content"] for m in body["messages"] if m["role"] == "assistant"] == ["answer 0"]
        await blocking(pi.close)
