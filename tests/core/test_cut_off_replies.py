"""A reply that stopped early is stored marked, survives a restart, and the model is told.

Through the ``openai`` and ``anthropic`` providers against a fake upstream: the first turn
streams some text and then fails (the connection is cut) or is interrupted; the row keeps the
text with ``meta["cut_off"]``, in SQLite across a new kernel, and the next request carries that
text followed by a note saying it was cut off.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import TextDelta
from hermes_core.history import CUT_OFF_NOTES
from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import ANTHROPIC, VENDORS, Vendor


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


@pytest.fixture(params=VENDORS, ids=[v.name for v in VENDORS])
def vendor(request: pytest.FixtureRequest) -> Vendor:
    return request.param


def script(upstream: FakeUpstream, vendor: Vendor, first: str, hold: asyncio.Event) -> None:
    """First call: stream ``Half an ans`` then ``first`` (``cut`` or ``stall``); later calls: a reply."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if calls > 1:
            for frame in vendor.reply("Here is the rest."):
                await response.write(frame)
            await response.write_eof()
            return response
        for frame in vendor.partial("Half an ans"):
            await response.write(frame)
        if first == "cut":
            await asyncio.sleep(0.05)
            assert request.transport is not None
            request.transport.abort()
        else:
            await hold.wait()
        return response

    upstream.on("POST", vendor.chat_path, handler)


def assistant_texts(vendor: Vendor, body: dict[str, Any]) -> list[str]:
    """The assistant texts of a request body, in order."""
    out = []
    for message in body["messages"]:
        if message["role"] != "assistant":
            continue
        content = message["content"]
        if vendor is ANTHROPIC:
            content = "".join(b["text"] for b in content if b["type"] == "text")
        out.append(content)
    return out


def settings(tmp_path: Path) -> dict[str, Any]:
    return {"storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}}


async def test_a_failed_reply_is_marked_and_the_next_request_says_so(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path
) -> None:
    script(upstream, vendor, "cut", asyncio.Event())
    plugins = ("tools", "sqlite")
    kernel = vendor_kernel(vendor, upstream, plugins=plugins, **settings(tmp_path))
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        sid = session.id
        first = await (await session.submit("explain it", owner="me")).outcome
        assert (first.reason, first.partial) == ("provider_error", True)
        await session.close()
    # A new process reads the row back from SQLite with its mark.
    again = vendor_kernel(vendor, upstream, plugins=plugins, **settings(tmp_path))
    async with again.running():
        session = await again.open_session(session_id=sid, source="embed", owner="me", cwd=tmp_path)
        (cut,) = [r for r in await session.history() if r.role == "assistant"]
        assert cut.content == "Half an ans" and cut.meta["cut_off"] == "error"
        second = await (await session.submit("go on", owner="me")).outcome
        assert second.reason == "stop"
    assert len(upstream.requests) == 2
    assert assistant_texts(vendor, upstream.requests[1].body) == [f"Half an ans\n\n{CUT_OFF_NOTES['error']}"]


async def test_an_interrupted_reply_is_marked_and_the_next_request_says_so(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path
) -> None:
    hold = asyncio.Event()
    script(upstream, vendor, "stall", hold)
    kernel = vendor_kernel(vendor, upstream)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        turn = await session.submit("explain it", owner="me")
        stopping: list[asyncio.Task[Any]] = []
        async for event in turn.events():  # interrupt once the text is on screen
            if isinstance(event, TextDelta) and not stopping:
                stopping.append(asyncio.create_task(session.interrupt(reason="user")))
        await stopping[0]
        assert (await turn.outcome).status == "interrupted"
        hold.set()
        (cut,) = [r for r in await session.history() if r.role == "assistant"]
        assert cut.content == "Half an ans" and cut.meta["cut_off"] == "interrupted"
        assert (await (await session.submit("go on", owner="me")).outcome).reason == "stop"
    expected = f"Half an ans\n\n{CUT_OFF_NOTES['interrupted']}"
    assert assistant_texts(vendor, upstream.requests[-1].body) == [expected]
