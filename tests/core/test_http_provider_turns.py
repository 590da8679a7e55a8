"""Real HTTP failures through whole turns: retried where docs/reference/core.md#provider-errors-and-retries
says, then a failed turn, never a hang."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import Retrying
from hermes_core.testing import make_kernel
from tests.core.conftest import collect
from tests.timing import scaled

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RELEASE = web.AppKey("release", asyncio.Event)


def sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def text_chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


async def ok_stream(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(sse(text_chunk("hello")))
    await resp.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    await resp.write(b"data: [DONE]\n\n")
    return resp


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[list[Handler], str]]:
    """A fake OpenAI-compatible server; each request takes the next handler in the list."""
    script: list[Handler] = []
    release = asyncio.Event()

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        handler = script.pop(0) if script else ok_stream
        return await handler(request)

    app = web.Application()
    app[RELEASE] = release
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield script, f"http://127.0.0.1:{port}/v1"
    release.set()  # let a stalling handler finish so cleanup is quick
    await runner.cleanup()


def kernel_for(base_url: str, **agent: Any) -> Any:
    return make_kernel(
        entry_points=["openai"],
        settings={
            "model": "local:any-model",
            "providers": {
                "custom": [{"name": "local", "base_url": base_url}],
                "local": {"stall_timeout_s": 0.3},
            },
            "agent": agent,
        },
    )


def status(code: int, headers: dict[str, str] | None = None) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": {"message": f"status {code}"}}, status=code, headers=headers)

    return handler


async def stall(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(sse(text_chunk("par")))
    await request.app[RELEASE].wait()
    return resp


async def cut(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(sse(text_chunk("part")))
    assert request.transport is not None
    request.transport.close()
    return resp


async def run_turn(base_url: str, workspace: Path, **agent: Any) -> list[Any]:
    kernel = kernel_for(base_url, **agent)
    async with kernel.running():
        session = await kernel.open_session(source="cli", owner="t", cwd=workspace)
        return await collect(await session.submit("hi", owner="t"))


async def test_429_then_success_is_retried(upstream: Any, workspace: Path) -> None:
    script, url = upstream
    script.append(status(429, {"Retry-After": "0"}))
    events = await run_turn(url, workspace, provider_retries=2)
    assert [e.kind for e in events if isinstance(e, Retrying)] == ["rate_limit"]
    assert events[-1].outcome.reason == "stop" and events[-1].text == "hello"


async def test_500s_are_retried_then_fail_the_turn(upstream: Any, workspace: Path) -> None:
    script, url = upstream
    script.extend([status(500, {"Retry-After": "0"})] * 3)
    events = await run_turn(url, workspace, provider_retries=2)
    assert len([e for e in events if isinstance(e, Retrying)]) == 2
    outcome = events[-1].outcome
    assert (outcome.status, outcome.reason, outcome.error_kind) == ("error", "provider_error", "upstream")


async def test_401_fails_at_once_as_auth(upstream: Any, workspace: Path) -> None:
    script, url = upstream
    script.append(status(401))
    events = await run_turn(url, workspace, provider_retries=2)
    assert not [e for e in events if isinstance(e, Retrying)]
    assert events[-1].outcome.error_kind == "auth"


async def test_a_stall_fails_the_turn_quickly(upstream: Any, workspace: Path) -> None:
    script, url = upstream
    script.append(stall)
    started = time.monotonic()
    events = await run_turn(url, workspace, provider_retries=2)
    assert time.monotonic() - started < scaled(5)
    outcome = events[-1].outcome
    assert (outcome.reason, outcome.error_kind, outcome.partial) == ("provider_error", "network", True)
    assert events[-1].text == "par"


async def test_a_mid_stream_disconnect_fails_the_turn(upstream: Any, workspace: Path) -> None:
    script, url = upstream
    script.append(cut)
    events = await run_turn(url, workspace, provider_retries=2)
    outcome = events[-1].outcome
    assert (outcome.reason, outcome.error_kind) == ("provider_error", "network")
