"""A self-hosted OpenAI-compatible server on loopback, for the provider-aware ``/model`` tests.

It serves ``GET /v1/models`` and streamed ``POST /v1/chat/completions`` the way vLLM or a LiteLLM
proxy does, and checks each chat request as a real server would: the bearer key, a model it
serves, ``stream: true`` and a message list; anything else is answered with the error status a
real server gives, which the test then sees. Every reply says which model answered
(``<model> says: <last user text>``), so a test reads the model off the reply too.

Also the three set-ups issue 22 names, as ``config.toml`` text, and a thread runner for the
synchronous TUI and CLI tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from aiohttp import web

from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream, Received
from tests.providers.vendors import delta

KEY = "sk-self-hosted"
SERVED = ("gpt-4.1-mini", "qwen3-coder-30b")

OPENAI_ONLY = """model = "openai:gpt-4.1-mini"
[providers.openai]
api_key = "sk-openai-only"
"""

OPENROUTER_ONLY = """model = "openrouter:openai/gpt-4.1-mini"
[providers.openrouter]
api_key = "sk-or-only"
"""


def self_hosted_config(url: str, model: str = "gpt-4.1-mini") -> str:
    """Return the ``config.toml`` of the third set-up: the ``openai`` provider at ``url``.

    This is what ``hermes acp --setup`` writes when a URL is entered for ``openai``.
    """
    return f'model = "openai:{model}"\n[providers.openai]\napi_key = "{KEY}"\nbase_url = "{url}/v1"\n'


def last_user_text(body: dict[str, Any]) -> str:
    """Return the text of the last user message of a chat request body."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return str(content)


class SelfHosted(FakeUpstream):
    """The fake server; ``chats()`` are the chat requests it received."""

    def __init__(self, served: Sequence[str] = SERVED, key: str = KEY) -> None:
        super().__init__()
        self.served = list(served)
        self.key = key

    async def __aenter__(self) -> SelfHosted:
        await super().__aenter__()
        self.on("GET", "/v1/models", self._models)
        self.on("POST", "/v1/chat/completions", self._chat)
        return self

    def chats(self) -> list[Received]:
        """Return the chat completion requests, oldest first."""
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    def turn(self, text: str) -> Received:
        """Return the one chat request whose last user message is ``text`` (a title or summary
        request carries the conversation instead)."""
        found = [r for r in self.chats() if last_user_text(r.body) == text]
        assert len(found) == 1, f"expected one chat request for {text!r}, got {len(found)}"
        return found[0]

    def probes(self) -> list[Received]:
        """Return the model-list requests."""
        return [r for r in self.requests if r.method == "GET" and r.path == "/v1/models"]

    def _refuse(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=401)
        return None

    async def _models(self, request: web.Request) -> web.StreamResponse:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        data = [{"id": m, "object": "model", "owned_by": "vllm", "max_model_len": 32768} for m in self.served]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        body = await request.json()
        model = body.get("model")
        if model not in self.served:
            error = {"message": f"The model `{model}` does not exist.", "type": "NotFoundError"}
            return web.json_response({"error": error}, status=404)
        if body.get("stream") is not True or not isinstance(body.get("messages"), list):
            return web.json_response({"error": {"message": "expected a streamed chat request"}}, status=400)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in (delta(content=f"{model} says: {last_user_text(body)}"), delta(finish_reason="stop")):
            await response.write(frame)
        await response.write(OPENAI_DONE)
        await response.write_eof()
        return response


@contextlib.contextmanager
def self_hosted_on_a_thread(served: Sequence[str] = SERVED) -> Iterator[SelfHosted]:
    """Run :class:`SelfHosted` on its own event loop, for synchronous clients."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = SelfHosted(served)
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def assert_chat(server: SelfHosted, text: str, model: str) -> None:
    """Check the turn that sent ``text``, exactly where it matters: route, key, model, streaming."""
    request = server.turn(text)
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers.get("Authorization") == f"Bearer {server.key}"
    body = request.body
    assert body["model"] == model
    assert body["stream"] is True
