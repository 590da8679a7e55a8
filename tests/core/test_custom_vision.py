"""Images to a custom OpenAI-compatible provider are sent, not dropped because nobody probed it yet.

A fake endpoint on loopback is configured as ``[[providers.custom]]``; each test asserts what the
chat request carried and what the turn reported.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ImagePart, Kernel, TextPart
from hermes_core.testing import make_kernel
from tests.core.conftest import collect
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import openai_error, openai_reply

PNG = b"\x89PNG\r\n\x1a\n"
DATA_URL = "data:image/png;base64,iVBORw0KGgo="


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


def custom_kernel(upstream: FakeUpstream) -> Kernel:
    return make_kernel(
        entry_points=["openai"],
        settings={
            "model": "local:vis-1",
            "providers": {"custom": [{"name": "local", "base_url": f"{upstream.url}/v1"}]},
            "agent": {"provider_retries": 0},
        },
    )


def chat_server(upstream: FakeUpstream, *, takes_images: bool) -> None:
    """Answer chat calls; a server without vision refuses image parts with a 400."""

    async def handler(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        images = [
            p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]
            if p["type"] == "image_url"
        ]  # fmt: skip
        if images and not takes_images:
            error = openai_error("invalid_request", "image input is not supported by this model")
            return web.json_response(error, status=400)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in openai_reply(f"I got {len(images)} image(s)."):
            await response.write(frame)
        await response.write_eof()
        return response

    upstream.on("POST", "/v1/chat/completions", handler)


def user_content(body: dict[str, Any]) -> Any:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def chat_bodies(upstream: FakeUpstream) -> list[Any]:
    return [r.body for r in upstream.requests if r.path.endswith("/chat/completions")]


async def look(kernel: Kernel, tmp_path: Path) -> Any:
    session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
    turn = await session.submit([TextPart("what is this"), ImagePart(data=PNG, mime="image/png")], owner="me")
    return (await collect(turn))[-1]


async def test_a_vision_model_of_a_custom_provider_gets_the_image_on_first_use(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.json("GET", "/v1/models", {"data": [{"id": "vis-1", "input_modalities": ["text", "image"]}]})
    chat_server(upstream, takes_images=True)
    kernel = custom_kernel(upstream)
    async with kernel.running():
        done = await look(kernel, tmp_path)
        again = await look(kernel, tmp_path)
    assert (done.outcome.reason, done.warnings, done.text) == ("stop", (), "I got 1 image(s).")
    assert again.warnings == ()
    (first, second) = chat_bodies(upstream)
    assert user_content(first) == [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
    ]
    assert user_content(second) == user_content(first)
    assert [r.path for r in upstream.requests].count("/v1/models") == 1  # probed once, on demand


async def test_an_unknown_model_gets_the_image_and_a_refusal_resends_without_it(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.json("GET", "/v1/models", {"data": [{"id": "vis-1"}]})  # says nothing about images
    chat_server(upstream, takes_images=False)
    kernel = custom_kernel(upstream)
    async with kernel.running():
        done = await look(kernel, tmp_path)
    assert (done.outcome.reason, done.text) == ("stop", "I got 0 image(s).")
    assert done.warnings == ("images_dropped",)
    (refused, resent) = chat_bodies(upstream)
    assert user_content(refused)[1]["type"] == "image_url"
    assert user_content(resent) == "what is this"


async def test_an_unknown_model_that_sees_images_gets_them(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.json("GET", "/v1/models", {"data": [{"id": "vis-1"}]})
    chat_server(upstream, takes_images=True)
    kernel = custom_kernel(upstream)
    async with kernel.running():
        done = await look(kernel, tmp_path)
    assert (done.text, done.warnings) == ("I got 1 image(s).", ())
    assert len(chat_bodies(upstream)) == 1
