"""An upstream that refuses images gets the turn without them, and the client is told.

A custom OpenAI-compatible endpoint does not say whether its model sees images, so the images are
sent; the fake refuses that call with a 400, Hermes sends it again without the images, and the
chat completion (plain and streamed) carries ``images_dropped`` instead of dropping them silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from aiohttp import web

from tests.api.api_helpers import Server, call, parse_sse
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import openai_reply

PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)


def _refuse_images(up: FakeUpstream) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if "image_url" in json.dumps(body["messages"]):
            error = {"error": {"message": "this model does not take images", "type": "invalid_request_error"}}
            return web.json_response(error, status=400)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in openai_reply("No picture came through."):
            await response.write(frame)
        await response.write_eof()
        return response

    up.on("POST", "/v1/chat/completions", handler)
    up.json("GET", "/v1/models", {"object": "list", "data": [{"id": "vis-1", "object": "model"}]})


def _body(text: str, stream: bool) -> dict[str, object]:
    parts = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": PIXEL}}]
    return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": parts}]}


async def test_a_refused_image_is_reported_on_chat_completions(make_server: Callable[..., Server]) -> None:
    async with FakeUpstream() as up:
        _refuse_images(up)
        srv = make_server(
            f'model = "myvis:vis-1"\n[[providers.custom]]\nname = "myvis"\nbase_url = "{up.url}/v1"\n'
        )
        plain = await call(srv, "POST", "/v1/chat/completions", _body("what is this", False))
        assert plain.status == 200, plain.text
        assert plain.json["choices"][0]["message"]["content"] == "No picture came through."
        assert plain.headers.get("X-Hermes-Warning") == "images_dropped"
        assert plain.json["hermes"]["warnings"] == ["images_dropped"]
        streamed = await call(srv, "POST", "/v1/chat/completions", _body("and this", True))
        assert streamed.status == 200, streamed.text
        chunks = [f["data"] for f in parse_sse(streamed.text) if isinstance(f.get("data"), dict)]
        last = [c for c in chunks if "hermes" in c][-1]
        assert last["hermes"]["warnings"] == ["images_dropped"]
        sent = [r.body for r in up.requests if r.path == "/v1/chat/completions"]
        with_images = [b for b in sent if "image_url" in json.dumps(b["messages"])]
        assert len(with_images) == 2 and len(sent) == 4  # each turn: refused once, then sent without


async def test_a_refused_image_is_reported_on_responses(make_server: Callable[..., Server]) -> None:
    async with FakeUpstream() as up:
        _refuse_images(up)
        srv = make_server(
            f'model = "myvis:vis-1"\n[[providers.custom]]\nname = "myvis"\nbase_url = "{up.url}/v1"\n'
        )
        parts = [{"type": "input_text", "text": "what is this"}, {"type": "input_image", "image_url": PIXEL}]
        body: dict[str, object] = {"model": "hermes-agent", "input": [{"role": "user", "content": parts}]}
        plain = await call(srv, "POST", "/v1/responses", body)
        assert plain.status == 200, plain.text
        assert "No picture came through." in plain.text
        assert plain.headers.get("X-Hermes-Warning") == "images_dropped"
        assert plain.json["hermes"]["warnings"] == ["images_dropped"]
        stored = await call(srv, "GET", f"/v1/responses/{plain.json['id']}")
        assert stored.json["hermes"]["warnings"] == ["images_dropped"]
        streamed = await call(srv, "POST", "/v1/responses", {**body, "stream": True})
        frames = [f["data"] for f in parse_sse(streamed.text) if isinstance(f.get("data"), dict)]
        final = frames[-1]
        assert final["type"] == "response.completed", final
        assert final["response"]["hermes"]["warnings"] == ["images_dropped"]
