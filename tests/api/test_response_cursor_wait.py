"""A cursor past the end of a background response still running waits for that response
(docs/reference/api-server.md#background-responses): the stored object can read finished a
moment before the running response adds its terminal event, and a cursor past that end must
still get the 400 a finished response gives, never an empty 200 stream."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from hermes_api_server.errors import ApiError, error_response
from hermes_api_server.response_background import Frames, follow
from tests.timing import scaled


async def _serve(frames: Frames) -> tuple[web.AppRunner, str]:
    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            return await follow(request, frames, int(request.query["after"]), {})
        except ApiError as err:
            return error_response(err)

    app = web.Application()
    app.router.add_get("/stream", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/stream"


def _event(n: int) -> dict[str, object]:
    return {"type": "response.output_text.delta", "sequence_number": n, "delta": str(n)}


async def test_a_cursor_past_the_end_waits_for_the_end_then_gets_400() -> None:
    frames = Frames()
    frames.add([_event(0), _event(1)])
    runner, url = await _serve(frames)
    try:
        async with aiohttp.ClientSession() as http:
            asking = asyncio.ensure_future(http.get(url, params={"after": "100000"}))
            done, _ = await asyncio.wait({asking}, timeout=scaled(0.3))
            assert not done, "answered before the running response reached the cursor or ended"
            frames.add([{"type": "response.completed", "sequence_number": 2}], end=True)
            async with await asyncio.wait_for(asking, scaled(10)) as reply:
                assert reply.status == 400
                err = (await reply.json())["error"]
            assert err["param"] == "starting_after" and "past the last event" in err["message"]
    finally:
        await runner.cleanup()
