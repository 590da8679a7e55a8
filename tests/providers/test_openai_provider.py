"""The ``openai`` provider against a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import time
import traceback
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import pytest
from aiohttp import web

from hermes_core import (
    ChatMessage,
    ChatRequest,
    Chunk,
    FinishChunk,
    ImagePart,
    ProviderError,
    ProviderPreset,
    ReasoningChunk,
    TextChunk,
    TextPart,
    ToolCallChunk,
    ToolCallRequest,
    ToolSchema,
    UsageChunk,
)
from hermes_openai.plugin import PRESETS, hermes_model_providers, make_provider
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream, closed_port, openai_frame

KEY = "sk-test-9f8e7d6c5b4a39281706"


def delta(**fields: Any) -> bytes:
    """Return a chunk frame whose first choice carries ``fields`` as its delta."""
    finish = fields.pop("finish_reason", None)
    return openai_frame(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": fields, "finish_reason": finish}],
        }
    )


def usage(prompt: int, completion: int, reasoning: int = 0) -> bytes:
    """Return the usage-only chunk sent when ``include_usage`` is on."""
    body: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if reasoning:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return openai_frame({"id": "chatcmpl-1", "choices": [], "usage": body})


def hello(model: str = "gpt-4.1-mini") -> ChatRequest:
    return ChatRequest(model=model, messages=(ChatMessage(role="user", content="hi"),))


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


def provider_for(upstream: FakeUpstream, **settings: Any) -> Any:
    values: dict[str, Any] = {"api_key": KEY, "base_url": f"{upstream.url}/v1", "stall_timeout_s": 5.0}
    values.update(settings)
    return make_provider(values, name="openai")


async def collect(provider: Any, request: ChatRequest) -> list[Chunk]:
    try:
        return [chunk async for chunk in provider.stream(request)]
    finally:
        await provider.aclose()


async def failure(provider: Any, request: ChatRequest | None = None) -> tuple[ProviderError, list[Chunk]]:
    """Run a stream that must fail; return the error and the chunks seen before it."""
    seen: list[Chunk] = []
    try:
        with pytest.raises(ProviderError) as info:
            async for chunk in provider.stream(request or hello()):
                seen.append(chunk)
    finally:
        await provider.aclose()
    return info.value, seen


def assert_no_key(error: ProviderError) -> None:
    text = "".join(traceback.format_exception(error))
    assert KEY not in error.message
    assert KEY not in str(error)
    assert KEY not in text


# --- streaming -----------------------------------------------------------------------------


async def test_streams_text_then_usage_then_finish(upstream: FakeUpstream) -> None:
    upstream.stream(
        "/v1/chat/completions",
        [
            delta(role="assistant", content=""),
            delta(content="Hel"),
            delta(content="lo, "),
            delta(content="world"),
            delta(finish_reason="stop"),
            usage(12, 3),
            OPENAI_DONE,
        ],
        split=True,
    )
    chunks = await collect(provider_for(upstream), hello())
    assert chunks == [
        TextChunk("Hel"),
        TextChunk("lo, "),
        TextChunk("world"),
        UsageChunk(input=12, output=3, reasoning=0),
        FinishChunk("stop"),
    ]


async def test_reasoning_fields_become_reasoning_chunks(upstream: FakeUpstream) -> None:
    upstream.stream(
        "/v1/chat/completions",
        [
            delta(reasoning_content="Let me think. "),
            delta(reasoning="The user greets me."),
            delta(content="Hi!"),
            delta(finish_reason="stop"),
            usage(5, 20, reasoning=14),
            OPENAI_DONE,
        ],
    )
    chunks = await collect(provider_for(upstream), hello())
    assert chunks == [
        ReasoningChunk("Let me think. "),
        ReasoningChunk("The user greets me."),
        TextChunk("Hi!"),
        UsageChunk(input=5, output=20, reasoning=14),
        FinishChunk("stop"),
    ]


async def test_parallel_tool_calls_are_assembled_from_fragments(upstream: FakeUpstream) -> None:
    def call(index: int, **fields: Any) -> dict[str, Any]:
        return {"index": index, **fields}

    upstream.stream(
        "/v1/chat/completions",
        [
            delta(content="Checking both."),
            delta(
                tool_calls=[
                    call(0, id="call_a", type="function", function={"name": "read_file", "arguments": ""})
                ]
            ),
            delta(tool_calls=[call(0, function={"arguments": '{"pa'})]),
            delta(
                tool_calls=[
                    call(1, id="call_b", type="function", function={"name": "terminal", "arguments": '{"co'})
                ]
            ),
            delta(tool_calls=[call(0, function={"arguments": 'th": "a.txt"'})]),
            delta(tool_calls=[call(1, function={"arguments": 'mmand": "ls -l"}'})]),
            delta(tool_calls=[call(0, function={"arguments": "}"})]),
            delta(finish_reason="tool_calls"),
            usage(40, 30),
            OPENAI_DONE,
        ],
    )
    chunks = await collect(provider_for(upstream), hello())
    assert chunks == [
        TextChunk("Checking both."),
        ToolCallChunk(ToolCallRequest("call_a", "read_file", '{"path": "a.txt"}')),
        ToolCallChunk(ToolCallRequest("call_b", "terminal", '{"command": "ls -l"}')),
        UsageChunk(input=40, output=30),
        FinishChunk("tool_calls"),
    ]
    assert json.loads(chunks[1].call.arguments) == {"path": "a.txt"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("upstream_reason", "reason"),
    [("length", "length"), ("content_filter", "refusal"), ("stop", "stop"), ("tool_calls", "tool_calls")],
)
async def test_finish_reasons_are_mapped(upstream: FakeUpstream, upstream_reason: str, reason: str) -> None:
    upstream.stream(
        "/v1/chat/completions", [delta(content="x"), delta(finish_reason=upstream_reason), OPENAI_DONE]
    )
    chunks = await collect(provider_for(upstream), hello())
    assert chunks[-1] == FinishChunk(reason)  # type: ignore[arg-type]


async def test_request_is_mapped_to_the_chat_completions_body(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="ok"), delta(finish_reason="stop"), OPENAI_DONE])
    png = b"\x89PNG\r\n\x1a\nfake"
    request = ChatRequest(
        model="gpt-4.1",
        system="You are Hermes.",
        messages=(
            ChatMessage(
                role="user",
                content="what is in this picture?",
                parts=(TextPart("what is in this picture?"), ImagePart(data=png, mime="image/png")),
            ),
            ChatMessage(
                role="assistant",
                content="",
                tool_calls=(ToolCallRequest("call_1", "read_file", '{"path": "a.txt"}'),),
            ),
            ChatMessage(role="tool", content="file body", tool_call_id="call_1", name="read_file"),
            ChatMessage(
                role="user", content="and now?", parts=(ImagePart(url="https://example.test/b.jpg"),)
            ),
        ),
        tools=(
            ToolSchema(
                "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
            ),
        ),
        options={"temperature": 0.2, "max_tokens": 100, "not_an_openai_field": 1},
    )
    provider = provider_for(upstream, extra_headers={"X-Title": "hermes-tests"})
    await collect(provider, request)

    received = upstream.last()
    assert received.method == "POST"
    assert received.path == "/v1/chat/completions"
    assert received.headers["Authorization"] == f"Bearer {KEY}"
    assert received.headers["X-Title"] == "hermes-tests"
    body = received.body
    assert body["model"] == "gpt-4.1"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 100  # a custom endpoint gets the classic name
    assert "not_an_openai_field" not in body
    data_url = "data:image/png;base64," + base64.b64encode(png).decode()
    assert body["messages"] == [
        {"role": "system", "content": "You are Hermes."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": data_url}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "file body"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and now?"},
                {"type": "image_url", "image_url": {"url": "https://example.test/b.jpg"}},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]


async def test_reasoning_effort_is_sent_to_compatible_servers(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="ok"), delta(finish_reason="stop"), OPENAI_DONE])
    request = ChatRequest(model="qwen3", messages=hello().messages, reasoning_effort="low")
    await collect(provider_for(upstream), request)
    assert upstream.last().body["reasoning_effort"] == "low"


async def test_a_server_that_ignores_stream_true_still_works(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        },
    )
    chunks = await collect(provider_for(upstream), hello())
    assert chunks == [
        ToolCallChunk(ToolCallRequest("c1", "ls", "{}")),
        UsageChunk(input=3, output=4),
        FinishChunk("tool_calls"),
    ]


# --- HTTP errors ---------------------------------------------------------------------------


async def test_401_is_an_auth_error_without_the_key(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request_error"}},
        status=401,
    )
    error, seen = await failure(provider_for(upstream))
    assert seen == []
    assert error.kind == "auth"
    assert error.retryable is False
    assert error.status == 401
    assert "Incorrect API key provided" in error.message
    assert error.message.startswith("openai: ")
    assert_no_key(error)


async def test_401_without_a_key_says_which_variable_to_set(upstream: FakeUpstream) -> None:
    upstream.json("POST", "/v1/chat/completions", {"error": {"message": "Missing bearer"}}, status=401)
    provider = make_provider({"base_url": f"{upstream.url}/v1"}, name="openai")
    error, _ = await failure(provider)
    assert error.kind == "auth"
    assert "OPENAI_API_KEY" in error.message
    assert "Authorization" not in upstream.last().headers


async def test_403_is_an_auth_error(upstream: FakeUpstream) -> None:
    upstream.json("POST", "/v1/chat/completions", {"error": {"message": "forbidden"}}, status=403)
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable, error.status) == ("auth", False, 403)


async def test_429_is_a_retryable_rate_limit_with_retry_after_seconds(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}},
        status=429,
        headers={"Retry-After": "7"},
    )
    error, _ = await failure(provider_for(upstream))
    assert error.kind == "rate_limit"
    assert error.retryable is True
    assert error.retry_after == 7.0
    assert "Rate limit reached" in error.message
    assert_no_key(error)


async def test_429_retry_after_as_an_http_date(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {"error": {"message": "slow down"}},
        status=429,
        headers={"Retry-After": formatdate(time.time() + 30, usegmt=True)},
    )
    error, _ = await failure(provider_for(upstream))
    assert error.kind == "rate_limit"
    assert error.retry_after is not None
    assert 25 <= error.retry_after <= 31


async def test_429_for_an_exhausted_quota_is_not_retried(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}},
        status=429,
    )
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable) == ("rate_limit", False)


async def test_500_is_a_retryable_upstream_error(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST", "/v1/chat/completions", {"error": {"message": "The server had an error"}}, status=500
    )
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable, error.status) == ("upstream", True, 500)
    assert "The server had an error" in error.message


async def test_400_is_an_upstream_error_carrying_the_upstream_message(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}},
        status=404,
    )
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable, error.status) == ("upstream", False, 404)
    assert "The model `gpt-9` does not exist" in error.message


async def test_an_html_error_page_still_gives_a_readable_message(upstream: FakeUpstream) -> None:
    async def bad_gateway(request: web.Request) -> web.StreamResponse:
        return web.Response(
            status=502, text="<html><body>502 Bad Gateway</body></html>", content_type="text/html"
        )

    upstream.on("POST", "/v1/chat/completions", bad_gateway)
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable) == ("upstream", True)
    assert "502" in error.message


# --- stream failures -----------------------------------------------------------------------


async def test_an_error_object_inside_the_stream_is_an_upstream_error(upstream: FakeUpstream) -> None:
    upstream.stream(
        "/v1/chat/completions",
        [delta(content="par"), openai_frame({"error": {"message": "Provider overloaded", "code": 502}})],
    )
    error, seen = await failure(provider_for(upstream))
    assert seen == [TextChunk("par")]
    assert error.kind == "upstream"
    assert "Provider overloaded" in error.message


async def test_a_stall_fails_with_network_within_the_stall_timeout(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="first")], then="stall")
    started = time.monotonic()
    error, seen = await failure(provider_for(upstream, stall_timeout_s=0.3))
    elapsed = time.monotonic() - started
    assert seen == [TextChunk("first")]
    assert error.kind == "network"
    assert error.retryable is False
    assert "stalled" in error.message
    assert elapsed < 2.0


async def test_no_response_headers_fails_within_the_stall_timeout(upstream: FakeUpstream) -> None:
    release = asyncio.Event()

    async def silent(request: web.Request) -> web.StreamResponse:
        try:
            await asyncio.wait_for(release.wait(), 5)
        except TimeoutError:
            pass
        return web.Response(text="late")

    upstream.on("POST", "/v1/chat/completions", silent)
    started = time.monotonic()
    error, _ = await failure(provider_for(upstream, stall_timeout_s=0.3))
    release.set()
    assert error.kind == "network"
    assert time.monotonic() - started < 2.0


async def test_a_mid_stream_disconnect_is_a_network_error(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="partial")], then="abort")
    error, seen = await failure(provider_for(upstream))
    assert seen == [TextChunk("partial")]
    assert error.kind == "network"
    assert error.retryable is False
    assert_no_key(error)


async def test_a_stream_that_ends_without_finishing_is_a_network_error(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="partial")])
    error, seen = await failure(provider_for(upstream))
    assert seen == [TextChunk("partial")]
    assert error.kind == "network"
    assert "ended before" in error.message


async def test_a_malformed_stream_is_a_network_error(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="ok"), b"data: {not json\n\n"])
    error, _ = await failure(provider_for(upstream))
    assert error.kind == "network"
    assert "malformed" in error.message


async def test_connection_refused_is_a_network_error() -> None:
    provider = make_provider(
        {"api_key": KEY, "base_url": f"http://127.0.0.1:{closed_port()}/v1"}, name="local"
    )
    started = time.monotonic()
    error, _ = await failure(provider)
    assert error.kind == "network"
    assert error.retryable is False
    assert error.message.startswith("local: cannot connect to http://127.0.0.1:")
    assert time.monotonic() - started < 2.0
    assert_no_key(error)


async def test_credentials_in_the_base_url_never_reach_a_message() -> None:
    port = closed_port()
    provider = make_provider(
        {"base_url": f"http://alice:hunter2secret@127.0.0.1:{port}/v1?token=abcdef"}, name="x"
    )
    error, _ = await failure(provider)
    assert "hunter2secret" not in error.message
    assert "abcdef" not in error.message
    assert f"127.0.0.1:{port}/v1" in error.message


# --- models --------------------------------------------------------------------------------


async def test_probe_lists_models_and_caches_them_for_list_models(upstream: FakeUpstream) -> None:
    upstream.json(
        "GET",
        "/v1/models",
        {
            "object": "list",
            "data": [
                {"id": "qwen3:8b", "object": "model"},
                {"id": "llava", "object": "model", "architecture": {"input_modalities": ["text", "image"]}},
                {"id": "big", "object": "model", "max_model_len": 32768},
            ],
        },
    )
    provider = make_provider({"api_key": KEY}, name="mybox", preset=custom_preset(upstream))
    try:
        assert await provider.list_models() == []
        models = await provider.probe(2.0)
        assert [(m.id, m.context_window, m.vision) for m in models] == [
            ("qwen3:8b", None, False),
            ("llava", None, True),
            ("big", 32768, False),
        ]
        assert await provider.list_models() == models
    finally:
        await provider.aclose()
    assert upstream.last().headers["Authorization"] == f"Bearer {KEY}"


async def test_probe_of_a_dead_endpoint_fails_quickly() -> None:
    provider = make_provider(
        {}, name="gone", preset=ProviderPreset("gone", "", f"http://127.0.0.1:{closed_port()}/v1")
    )
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as info:
            await provider.probe(2.0)
    finally:
        await provider.aclose()
    assert info.value.kind == "network"
    assert time.monotonic() - started < 2.0


async def test_probe_of_an_endpoint_that_never_answers_respects_the_timeout(upstream: FakeUpstream) -> None:
    release = asyncio.Event()

    async def silent(request: web.Request) -> web.StreamResponse:
        try:
            await asyncio.wait_for(release.wait(), 5)
        except TimeoutError:
            pass
        return web.json_response({"data": []})

    upstream.on("GET", "/v1/models", silent)
    provider = make_provider({}, name="slow", preset=custom_preset(upstream))
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as info:
            await provider.probe(0.3)
    finally:
        release.set()
        await provider.aclose()
    assert info.value.kind == "network"
    assert time.monotonic() - started < 2.0


async def test_probe_401_is_an_auth_error(upstream: FakeUpstream) -> None:
    upstream.json("GET", "/v1/models", {"error": {"message": "bad key"}}, status=401)
    provider = provider_for(upstream)
    try:
        with pytest.raises(ProviderError) as info:
            await provider.probe(2.0)
    finally:
        await provider.aclose()
    assert info.value.kind == "auth"


async def test_offline_models_need_no_network() -> None:
    official = make_provider({}, name="openai")
    models = {m.id: m for m in await official.list_models()}
    assert models["gpt-4.1"].vision is True
    assert models["gpt-4.1"].context_window == 1_047_576
    assert "gpt-4o-mini" in models

    local = make_provider(
        {"models": ["qwen3:8b", {"id": "llava:13b", "context_window": 4096, "vision": True}]},
        name="ollama",
        preset=preset("ollama"),
    )
    assert [(m.id, m.context_window, m.vision) for m in await local.list_models()] == [
        ("qwen3:8b", None, False),
        ("llava:13b", 4096, True),
    ]
    openrouter = make_provider({}, name="openrouter", preset=preset("openrouter"))
    assert any(m.id.startswith("anthropic/") for m in await openrouter.list_models())


# --- presets and custom providers ----------------------------------------------------------


def preset(name: str) -> ProviderPreset:
    return next(p for p in PRESETS if p.name == name)


def custom_preset(upstream: FakeUpstream) -> ProviderPreset:
    return ProviderPreset(name="mybox", summary="my box", base_url=f"{upstream.url}/v1", requires_key=False)


def test_the_spec_declares_openai_with_its_presets() -> None:
    spec = hermes_model_providers()
    assert spec.name == "openai"
    assert spec.serves_custom is True
    assert dict(spec.env_vars) == {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}
    assert spec.settings_model == "hermes_openai.settings:OpenAISettings"
    urls = {p.name: (p.base_url, dict(p.env_vars), p.requires_key) for p in spec.presets}
    assert urls == {
        "openrouter": ("https://openrouter.ai/api/v1", {"api_key": "OPENROUTER_API_KEY"}, True),
        "ollama": ("http://127.0.0.1:11434/v1", {}, False),
        "vllm": ("http://127.0.0.1:8000/v1", {}, False),
        "llamacpp": ("http://127.0.0.1:8080/v1", {}, False),
        "lmstudio": ("http://127.0.0.1:1234/v1", {}, False),
    }


@pytest.mark.parametrize("name", ["openrouter", "ollama", "vllm", "llamacpp", "lmstudio"])
def test_a_preset_provider_targets_the_preset_url(name: str) -> None:
    provider = make_provider({}, name=name, preset=preset(name))
    assert provider.base_url == preset(name).base_url  # type: ignore[attr-defined]


def test_openai_without_a_preset_targets_api_openai_com() -> None:
    provider = make_provider({}, name="openai")
    assert provider.base_url == "https://api.openai.com/v1"  # type: ignore[attr-defined]


async def test_a_custom_provider_streams_from_its_own_base_url(upstream: FakeUpstream) -> None:
    upstream.stream(
        "/v1/chat/completions", [delta(content="local"), delta(finish_reason="stop"), OPENAI_DONE]
    )
    provider = make_provider({}, name="mybox", preset=custom_preset(upstream))
    chunks = await collect(provider, hello("qwen3:8b"))
    assert chunks[0] == TextChunk("local")
    received = upstream.last()
    assert received.path == "/v1/chat/completions"
    assert received.body["model"] == "qwen3:8b"
    assert "Authorization" not in received.headers  # no key configured, none sent


async def test_settings_base_url_overrides_the_preset(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="ok"), delta(finish_reason="stop"), OPENAI_DONE])
    provider = make_provider(
        {"api_key": KEY, "base_url": f"{upstream.url}/v1/"}, name="ollama", preset=preset("ollama")
    )
    chunks = await collect(provider, hello("qwen3:8b"))
    assert chunks[-1] == FinishChunk("stop")
    assert upstream.last().headers["Authorization"] == f"Bearer {KEY}"


async def test_the_provider_reopens_its_session_after_aclose(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="ok"), delta(finish_reason="stop"), OPENAI_DONE])
    provider = provider_for(upstream)
    first = [c async for c in provider.stream(hello())]
    await provider.aclose()
    second = await collect(provider, hello())
    assert first == second
    assert len(upstream.requests) == 2


def test_settings_reject_unknown_keys() -> None:
    from pydantic import ValidationError

    from hermes_openai.settings import OpenAISettings

    with pytest.raises(ValidationError):
        OpenAISettings.model_validate({"api_kye": "x"})
    settings = OpenAISettings.model_validate({"api_key": "", "base_url": "http://h/v1/"})
    assert settings.api_key is None
    assert settings.base_url == "http://h/v1"
    assert KEY not in repr(OpenAISettings.model_validate({"api_key": KEY}))


def test_importing_the_plugin_and_listing_models_is_cheap() -> None:
    code = (
        "import asyncio, sys\n"
        "import hermes_openai.plugin as p\n"
        "assert 'pydantic' not in sys.modules, 'plugin.py imported pydantic'\n"
        "spec = p.hermes_model_providers()\n"
        "provider = spec.factory({}, name='openai', preset=None)\n"
        "asyncio.run(provider.list_models())\n"
        "assert 'aiohttp' not in sys.modules, 'offline use imported aiohttp'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


async def test_an_interrupted_stream_returns_at_once(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="first")], then="stall")
    provider = provider_for(upstream, stall_timeout_s=30.0)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in provider.stream(hello()):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1.0
    upstream.stream(
        "/v1/chat/completions", [delta(content="again"), delta(finish_reason="stop"), OPENAI_DONE]
    )
    chunks = await collect(provider, hello())  # the provider is still usable
    assert chunks[0] == TextChunk("again")


# The first loop's session cannot be closed once that loop is gone; aiohttp warns about it.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_a_provider_survives_being_used_from_two_event_loops() -> None:
    async def once() -> list[Chunk]:
        async with FakeUpstream() as up:
            up.stream("/v1/chat/completions", [delta(content="hi"), delta(finish_reason="stop"), OPENAI_DONE])
            provider.base_url = f"{up.url}/v1"
            return [c async for c in provider.stream(hello())]

    provider: Any = make_provider({"api_key": KEY}, name="openai")
    assert asyncio.run(once())[0] == TextChunk("hi")
    assert asyncio.run(once())[0] == TextChunk("hi")
    asyncio.run(provider.aclose())
