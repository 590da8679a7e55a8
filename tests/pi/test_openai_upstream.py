"""``hermes pi`` through the ``openai`` provider against a fake OpenAI-compatible upstream on loopback.

The fake checks the exact requests the core sends for what pi's commands asked (thinking level,
bash context, tools, model switch, follow-ups, compaction), and plays the upstreams pi's users
complain about: one that accepts the request and never answers, one that stops mid-answer, one
that rate-limits. Every run still ends in exactly one ``agent_settled``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.pi.client import PiProcess, write_config
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import delta, openai_reply, usage
from tests.timing import scaled

KEY = "sk-test-0123456789abcdef"
PATH = "/v1/chat/completions"


def configure(home: Path, url: str, extra: str = "") -> None:
    write_config(
        home,
        'model = "openai:gpt-test"\n[titles]\nrefine = false\n[agent]\nprovider_retries = 0\n'
        f'[providers.openai]\napi_key = "{KEY}"\nbase_url = "{url}/v1"\nstall_timeout_s = 1\n{extra}',
    )


def tool_call_reply(name: str, arguments: dict[str, Any]) -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [delta(tool_calls=[call]), delta(finish_reason="tool_calls"), usage(12, 3)]


async def stream(request: web.Request, frames: list[bytes]) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for frame in frames:
        await response.write(frame)
    await response.write_eof()
    return response


async def blocking(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kw)


Spawn = Callable[..., PiProcess]


async def start(spawn: Spawn) -> PiProcess:
    pi: PiProcess = await blocking(spawn)
    return pi


async def test_what_pi_asks_for_reaches_the_upstream_request(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    async with FakeUpstream() as up:
        answers: list[Callable[[web.Request], Awaitable[web.StreamResponse]]] = []

        async def handler(request: web.Request) -> web.StreamResponse:
            return await answers.pop(0)(request)

        up.on("POST", PATH, handler)
        answers.extend(
            [
                lambda r: stream(r, tool_call_reply("list_dir", {"path": "."})),
                lambda r: stream(r, openai_reply("listed it")),
                lambda r: stream(r, openai_reply("later done")),
                lambda r: stream(r, openai_reply("other model here")),
            ]
        )
        configure(home, up.url)
        (workspace / "seen.txt").write_text("x")
        pi = await start(spawn)
        await blocking(pi.call, "set_thinking_level", level="high")
        assert (await blocking(pi.call, "bash", command="echo ctx"))["output"] == "ctx\n"
        await blocking(pi.call, "follow_up", message="later")
        records = await blocking(pi.prompt_and_wait, "first")

        first, second, third = (r.body for r in up.requests[:3])
        assert up.requests[0].headers["Authorization"] == f"Bearer {KEY}"
        assert first["model"] == "gpt-test" and first["stream"] is True
        assert first["reasoning_effort"] == "high"
        assert first["messages"][-1] == {"role": "user", "content": "Ran `echo ctx`\n```\nctx\n```\n\nfirst"}
        assert "list_dir" in {t["function"]["name"] for t in first["tools"]}
        assert second["messages"][-2]["tool_calls"][0]["function"] == {
            "name": "list_dir",
            "arguments": '{"path": "."}',
        }
        assert second["messages"][-1]["role"] == "tool" and "seen.txt" in second["messages"][-1]["content"]
        assert third["messages"][-1] == {"role": "user", "content": "later"}
        finals = [
            "".join(b.get("text", "") for b in r["message"]["content"])
            for r in records
            if r["type"] == "message_end" and r["message"]["role"] == "assistant"
        ]
        assert finals == ["", "listed it", "later done"]
        assert [r["type"] for r in records].count("agent_settled") == 1

        chosen = await blocking(pi.call, "set_model", provider="openai", modelId="gpt-other")
        assert chosen["provider"] == "openai" and chosen["id"] == "gpt-other"
        await blocking(pi.prompt_and_wait, "and you?")
        fourth = up.requests[3].body
        assert fourth["model"] == "gpt-other"
        assert [m["content"] for m in fourth["messages"] if m["role"] == "user"][-1] == "and you?"
        await blocking(pi.close)


async def test_compact_sends_the_summary_request(spawn: Spawn, home: Path) -> None:
    async with FakeUpstream() as up:

        async def handler(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            if "compress conversations" in json.dumps(body["messages"][0]):
                return await stream(request, openai_reply("A short summary."))
            return await stream(request, openai_reply("noted"))

        up.on("POST", PATH, handler)
        configure(home, up.url)
        pi = await start(spawn)
        for text in ("one", "two"):
            await blocking(pi.prompt_and_wait, text)
        result = await blocking(pi.call, "compact", customInstructions="the numbers")
        assert result["summary"] == "A short summary."
        summary_request = up.requests[-1].body
        assert "the numbers" in json.dumps(summary_request)
        roles = [m["role"] for m in (await blocking(pi.call, "get_messages"))["messages"]]
        assert roles == ["compactionSummary", "user", "assistant"]
        await blocking(pi.prompt_and_wait, "three")
        after = up.requests[-1].body["messages"]
        assert "A short summary." in json.dumps(after) and [
            m["content"] for m in after if m["role"] == "user"
        ][-2:] == [
            "two",
            "three",
        ]
        await blocking(pi.close)


async def test_a_silent_upstream_settles_the_run_within_the_stall_timeout(spawn: Spawn, home: Path) -> None:
    """The provider accepts the request and sends nothing: the stall timeout ends the run."""
    async with FakeUpstream() as up:
        up.silent("POST", PATH)
        configure(home, up.url)
        pi = await start(spawn)
        begun = time.monotonic()
        records = await blocking(pi.prompt_and_wait, "anyone there?", timeout=60)
        took = time.monotonic() - begun
        assert up.requests, "the request reached the upstream"
        assert took < scaled(1 + 1 + 5)  # connect + stall timeout, plus slack for a loaded machine
        assert [r["type"] for r in records].count("agent_settled") == 1
        assert records[-1] == {"type": "agent_settled", "aborted": False}
        last = [r["message"] for r in records if r["type"] == "message_end"][-1]
        assert last["role"] == "assistant" and last["stopReason"] == "error"
        assert "1 s" in last["errorMessage"]
        assert (await blocking(pi.call, "get_state"))["isStreaming"] is False
        await blocking(pi.close)


async def test_an_upstream_that_stops_mid_answer_keeps_the_partial_text(spawn: Spawn, home: Path) -> None:
    async with FakeUpstream() as up:
        up.stream(PATH, [delta(content="half an "), delta(content="answer")], then="stall")
        configure(home, up.url)
        pi = await start(spawn)
        records = await blocking(pi.prompt_and_wait, "go", timeout=60)
        last = [r["message"] for r in records if r["type"] == "message_end"][-1]
        assert last["stopReason"] == "error" and last["content"] == [
            {"type": "text", "text": "half an answer"}
        ]
        assert records[-1] == {"type": "agent_settled", "aborted": False}
        await blocking(pi.close)


async def test_retries_are_reported_and_abort_retry_stops_waiting(spawn: Spawn, home: Path) -> None:
    async with FakeUpstream() as up:
        waits = ["0", "30"]

        async def handler(request: web.Request) -> web.StreamResponse:
            if waits:
                error = {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}
                return web.json_response(error, status=429, headers={"Retry-After": waits.pop(0)})
            return await stream(request, openai_reply("made it"))

        up.on("POST", PATH, handler)
        configure(home, up.url)
        write_config(
            home, (home / "config.toml").read_text().replace("provider_retries = 0", "provider_retries = 3")
        )
        pi = await start(spawn)
        start_at = pi.mark()
        await blocking(pi.call, "prompt", message="hello")
        await blocking(pi.wait_type, "auto_retry_start", 2, start_at)
        begun = time.monotonic()
        await blocking(pi.call, "abort_retry")
        await blocking(pi.wait_type, "agent_settled", 1, start_at)
        assert time.monotonic() - begun < scaled(10)  # not the 30 s the upstream asked for
        starts = pi.of_type("auto_retry_start", start_at)
        assert [(s["attempt"], s["maxAttempts"], s["delayMs"]) for s in starts] == [(1, 3, 0), (2, 3, 20000)]
        assert pi.of_type("auto_retry_end", start_at) == [
            {"type": "auto_retry_end", "success": False, "attempt": 2, "finalError": "Retry cancelled"}
        ]
        last = [r["message"] for r in pi.of_type("message_end", start_at)][-1]
        assert last["stopReason"] == "error" and last["errorMessage"] == "Retry cancelled"
        assert pi.of_type("agent_settled", start_at) == [{"type": "agent_settled", "aborted": False}]
        # The next request goes through.
        assert [r for r in await blocking(pi.prompt_and_wait, "again") if r["type"] == "agent_settled"]
        await blocking(pi.close)
