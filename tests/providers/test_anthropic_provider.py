"""The ``anthropic`` provider against a fake Messages API server on loopback."""

from __future__ import annotations

import asyncio
import base64
import time
import traceback
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from hermes_anthropic.plugin import hermes_model_providers, make_provider
from hermes_core import (
    ChatMessage,
    ChatRequest,
    Chunk,
    FinishChunk,
    ImagePart,
    ProviderError,
    ReasoningChunk,
    TextChunk,
    TextPart,
    ToolCallChunk,
    ToolCallRequest,
    ToolSchema,
    UsageChunk,
)
from tests.providers.upstream_fakes import FakeUpstream, anthropic_frame, closed_port

KEY = "sk-ant-test-0123456789abcdef"
PATH = "/v1/messages"


def start(input_tokens: int = 10, **usage: int) -> bytes:
    return anthropic_frame(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5",
                "stop_reason": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
            },
        }
    )


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return anthropic_frame({"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return anthropic_frame({"type": "content_block_delta", "index": index, "delta": delta})


def text(index: int, value: str) -> bytes:
    return block_delta(index, {"type": "text_delta", "text": value})


def block_stop(index: int) -> bytes:
    return anthropic_frame({"type": "content_block_stop", "index": index})


def finish(reason: str, output_tokens: int) -> list[bytes]:
    return [
        anthropic_frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        ),
        anthropic_frame({"type": "message_stop"}),
    ]


def text_reply(*pieces: str, reason: str = "end_turn") -> list[bytes]:
    frames = [start(), block_start(0, {"type": "text", "text": ""})]
    frames += [text(0, piece) for piece in pieces]
    return [*frames, block_stop(0), *finish(reason, 5)]


def hello(model: str = "claude-sonnet-4-5", **fields: Any) -> ChatRequest:
    return ChatRequest(model=model, messages=(ChatMessage(role="user", content="hi"),), **fields)


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


def provider_for(upstream: FakeUpstream, **settings: Any) -> Any:
    values: dict[str, Any] = {"api_key": KEY, "base_url": upstream.url, "stall_timeout_s": 5.0}
    values.update(settings)
    return make_provider(values, name="anthropic")


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
    assert KEY not in error.message
    assert KEY not in "".join(traceback.format_exception(error))


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- streaming -----------------------------------------------------------------------------


async def test_streams_text_then_usage_then_finish(upstream: FakeUpstream) -> None:
    frames = [
        start(input_tokens=20, cache_read_input_tokens=100, cache_creation_input_tokens=5),
        anthropic_frame({"type": "ping"}),
        block_start(0, {"type": "text", "text": ""}),
        text(0, "Hello"),
        text(0, ", world"),
        block_stop(0),
        *finish("end_turn", 7),
    ]
    upstream.stream(PATH, frames, split=True)
    chunks = await collect(provider_for(upstream), hello())
    assert chunks == [
        TextChunk("Hello"),
        TextChunk(", world"),
        UsageChunk(input=125, output=7),
        FinishChunk("stop"),
    ]


async def test_thinking_deltas_become_reasoning_chunks(upstream: FakeUpstream) -> None:
    frames = [
        start(),
        block_start(0, {"type": "thinking", "thinking": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "The user says hi. "}),
        block_delta(0, {"type": "thinking_delta", "thinking": "Be brief."}),
        block_delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        text(1, "Hi!"),
        block_stop(1),
        *finish("end_turn", 30),
    ]
    upstream.stream(PATH, frames)
    chunks = await collect(provider_for(upstream), hello(reasoning_effort="high"))
    assert chunks == [
        ReasoningChunk("The user says hi. "),
        ReasoningChunk("Be brief."),
        TextChunk("Hi!"),
        UsageChunk(input=10, output=30),
        FinishChunk("stop"),
    ]
    body = upstream.last().body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 20_000}
    assert body["max_tokens"] > 20_000


async def test_thinking_stays_off_when_continuing_a_tool_loop(upstream: FakeUpstream) -> None:
    upstream.stream(PATH, text_reply("done"))
    request = ChatRequest(
        model="claude-sonnet-4-5",
        reasoning_effort="high",
        options={"temperature": 0.5},
        messages=(
            ChatMessage(role="user", content="list files"),
            ChatMessage(role="assistant", content="", tool_calls=(ToolCallRequest("toolu_1", "ls", "{}"),)),
            ChatMessage(role="tool", content="a.txt", tool_call_id="toolu_1", name="ls"),
        ),
    )
    await collect(provider_for(upstream), request)
    body = upstream.last().body
    assert "thinking" not in body
    assert body["temperature"] == 0.5


async def test_tool_use_blocks_are_assembled_from_json_fragments(upstream: FakeUpstream) -> None:
    frames = [
        start(),
        block_start(0, {"type": "text", "text": ""}),
        text(0, "Let me look."),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": ""}),
        block_delta(1, {"type": "input_json_delta", "partial_json": '{"pa'}),
        block_delta(1, {"type": "input_json_delta", "partial_json": 'th": "a.t'}),
        block_delta(1, {"type": "input_json_delta", "partial_json": 'xt"}'}),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_b", "name": "list_dir", "input": {}}),
        block_stop(2),
        *finish("tool_use", 40),
    ]
    upstream.stream(PATH, frames)
    chunks = await collect(provider_for(upstream), hello())
    assert chunks == [
        TextChunk("Let me look."),
        ToolCallChunk(ToolCallRequest("toolu_a", "read_file", '{"path": "a.txt"}')),
        ToolCallChunk(ToolCallRequest("toolu_b", "list_dir", "{}")),
        UsageChunk(input=10, output=40),
        FinishChunk("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [("max_tokens", "length"), ("refusal", "refusal"), ("stop_sequence", "stop"), ("end_turn", "stop")],
)
async def test_stop_reasons_are_mapped(upstream: FakeUpstream, stop_reason: str, reason: str) -> None:
    upstream.stream(PATH, text_reply("x", reason=stop_reason))
    chunks = await collect(provider_for(upstream), hello())
    assert chunks[-1] == FinishChunk(reason)  # type: ignore[arg-type]


async def test_request_is_mapped_to_the_messages_body(upstream: FakeUpstream) -> None:
    upstream.stream(PATH, text_reply("ok"))
    png = b"\x89PNG\r\n\x1a\nfake"
    request = ChatRequest(
        model="claude-sonnet-4-5",
        system="You are Hermes.",
        messages=(
            ChatMessage(
                role="user",
                content="what is this?",
                parts=(TextPart("what is this?"), ImagePart(data=png, mime="image/png")),
            ),
            ChatMessage(
                role="assistant",
                content="Reading two files.",
                tool_calls=(
                    ToolCallRequest("toolu_1", "read_file", '{"path": "a.txt"}'),
                    ToolCallRequest("toolu_2", "read_file", '{"path": "b.txt"}'),
                ),
            ),
            ChatMessage(role="tool", content="A", tool_call_id="toolu_1", name="read_file"),
            ChatMessage(role="tool", content="B", tool_call_id="toolu_2", name="read_file"),
            ChatMessage(role="assistant", content="Both read."),
            ChatMessage(
                role="user", content="and this url?", parts=(ImagePart(url="https://example.test/c.jpg"),)
            ),
        ),
        tools=(
            ToolSchema(
                "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
            ),
        ),
        options={"temperature": 0.3, "stop": "END", "frequency_penalty": 1},
    )
    await collect(provider_for(upstream), request)

    received = upstream.last()
    assert received.path == "/v1/messages"
    assert received.headers["x-api-key"] == KEY
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in received.headers
    body = received.body
    assert body["model"] == "claude-sonnet-4-5"
    assert body["stream"] is True
    assert body["max_tokens"] == 8192
    assert body["system"] == "You are Hermes."
    assert body["temperature"] == 0.3
    assert body["stop_sequences"] == ["END"]
    assert "frequency_penalty" not in body
    assert "thinking" not in body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": base64.b64encode(png).decode(),
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading two files."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Both read."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this url?"},
                {"type": "image", "source": {"type": "url", "url": "https://example.test/c.jpg"}},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]


async def test_system_messages_in_the_history_join_the_system_prompt(upstream: FakeUpstream) -> None:
    upstream.stream(PATH, text_reply("ok"))
    request = ChatRequest(
        model="claude-haiku-4-5",
        system="Base prompt.",
        messages=(ChatMessage(role="system", content="Extra rule."), ChatMessage(role="user", content="hi")),
        options={"max_tokens": 100},
    )
    await collect(provider_for(upstream, max_tokens=2000), request)
    body = upstream.last().body
    assert body["system"] == "Base prompt.\n\nExtra rule."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["max_tokens"] == 100


# --- HTTP errors ---------------------------------------------------------------------------


async def test_401_is_an_auth_error_without_the_key(upstream: FakeUpstream) -> None:
    upstream.json("POST", PATH, error_body("authentication_error", f"invalid x-api-key {KEY}"), status=401)
    error, seen = await failure(provider_for(upstream))
    assert seen == []
    assert (error.kind, error.retryable, error.status) == ("auth", False, 401)
    assert "invalid x-api-key" in error.message
    assert error.message.startswith("anthropic: ")
    assert_no_key(error)


async def test_401_without_a_key_names_the_variable(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST", PATH, error_body("authentication_error", "x-api-key header is required"), status=401
    )
    error, _ = await failure(make_provider({"base_url": upstream.url}, name="anthropic"))
    assert "ANTHROPIC_API_KEY" in error.message
    assert "x-api-key" not in upstream.last().headers


async def test_429_is_a_retryable_rate_limit_with_retry_after(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST", PATH, error_body("rate_limit_error", "Number of requests has exceeded your rate limit"),
        status=429, headers={"retry-after": "12"},
    )  # fmt: skip
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable, error.retry_after) == ("rate_limit", True, 12.0)
    assert "exceeded your rate limit" in error.message
    assert_no_key(error)


@pytest.mark.parametrize("status", [500, 529])
async def test_5xx_is_a_retryable_upstream_error(upstream: FakeUpstream, status: int) -> None:
    upstream.json("POST", PATH, error_body("overloaded_error", "Overloaded"), status=status)
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable, error.status) == ("upstream", True, status)
    assert "Overloaded" in error.message


async def test_400_carries_the_upstream_message(upstream: FakeUpstream) -> None:
    upstream.json("POST", PATH, error_body("invalid_request_error", "max_tokens: field required"), status=400)
    error, _ = await failure(provider_for(upstream))
    assert (error.kind, error.retryable, error.status) == ("upstream", False, 400)
    assert "max_tokens: field required" in error.message


# --- stream failures -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "kind", "retryable"),
    [
        ("overloaded_error", "upstream", True),
        ("api_error", "upstream", True),
        ("rate_limit_error", "rate_limit", True),
        ("invalid_request_error", "upstream", False),
    ],
)
async def test_an_error_event_in_the_stream(
    upstream: FakeUpstream, error_type: str, kind: str, retryable: bool
) -> None:
    frames = [
        start(),
        block_start(0, {"type": "text", "text": ""}),
        text(0, "par"),
        anthropic_frame(error_body(error_type, "Something went wrong upstream")),
    ]
    upstream.stream(PATH, frames)
    error, seen = await failure(provider_for(upstream))
    assert seen == [TextChunk("par")]
    assert (error.kind, error.retryable) == (kind, retryable)
    assert "Something went wrong upstream" in error.message


async def test_a_stall_fails_with_network_within_the_stall_timeout(upstream: FakeUpstream) -> None:
    frames = [start(), block_start(0, {"type": "text", "text": ""}), text(0, "first")]
    upstream.stream(PATH, frames, then="stall")
    started = time.monotonic()
    error, seen = await failure(provider_for(upstream, stall_timeout_s=0.3))
    assert seen == [TextChunk("first")]
    assert (error.kind, error.retryable) == ("network", False)
    assert "stalled" in error.message
    assert time.monotonic() - started < 2.0


async def test_a_mid_stream_disconnect_is_a_network_error(upstream: FakeUpstream) -> None:
    frames = [start(), block_start(0, {"type": "text", "text": ""}), text(0, "partial")]
    upstream.stream(PATH, frames, then="abort")
    error, seen = await failure(provider_for(upstream))
    assert seen == [TextChunk("partial")]
    assert (error.kind, error.retryable) == ("network", False)
    assert_no_key(error)


async def test_a_stream_without_message_stop_is_a_network_error(upstream: FakeUpstream) -> None:
    upstream.stream(PATH, [start(), block_start(0, {"type": "text", "text": ""}), text(0, "partial")])
    error, _ = await failure(provider_for(upstream))
    assert error.kind == "network"
    assert "ended before" in error.message


async def test_a_malformed_event_is_a_network_error(upstream: FakeUpstream) -> None:
    upstream.stream(PATH, [start(), b"event: content_block_delta\ndata: {oops\n\n"])
    error, _ = await failure(provider_for(upstream))
    assert error.kind == "network"
    assert "malformed" in error.message


async def test_connection_refused_is_a_network_error() -> None:
    provider = make_provider(
        {"api_key": KEY, "base_url": f"http://127.0.0.1:{closed_port()}"}, name="anthropic"
    )
    started = time.monotonic()
    error, _ = await failure(provider)
    assert (error.kind, error.retryable) == ("network", False)
    assert "cannot connect" in error.message
    assert time.monotonic() - started < 2.0
    assert_no_key(error)


async def test_an_interrupted_stream_returns_at_once(upstream: FakeUpstream) -> None:
    frames = [start(), block_start(0, {"type": "text", "text": ""}), text(0, "first")]
    upstream.stream(PATH, frames, then="stall")
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
    upstream.stream(PATH, text_reply("again"))
    chunks = await collect(provider, hello())  # the provider is still usable
    assert chunks[0] == TextChunk("again")


# --- models --------------------------------------------------------------------------------


async def test_probe_lists_models_from_v1_models(upstream: FakeUpstream) -> None:
    upstream.json(
        "GET",
        "/v1/models",
        {
            "data": [
                {"type": "model", "id": "claude-future-5", "display_name": "Claude Future 5"},
                {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"},
            ],
            "has_more": False,
        },
    )
    provider = provider_for(upstream)
    try:
        models = await provider.probe(2.0)
        offline = [m.id for m in await provider.list_models()]
    finally:
        await provider.aclose()
    assert [m.id for m in models] == ["claude-future-5", "claude-sonnet-4-5"]
    assert all(m.vision and m.context_window == 200_000 for m in models)
    assert "claude-future-5" in offline
    received = upstream.last()
    assert received.headers["x-api-key"] == KEY
    assert received.headers["anthropic-version"] == "2023-06-01"


async def test_probe_of_a_dead_endpoint_fails_quickly() -> None:
    provider = make_provider({"base_url": f"http://127.0.0.1:{closed_port()}"}, name="anthropic")
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as info:
            await provider.probe(2.0)
    finally:
        await provider.aclose()
    assert info.value.kind == "network"
    assert time.monotonic() - started < 2.0


async def test_probe_of_a_silent_endpoint_respects_the_timeout(upstream: FakeUpstream) -> None:
    release = asyncio.Event()

    async def silent(request: web.Request) -> web.StreamResponse:
        try:
            await asyncio.wait_for(release.wait(), 5)
        except TimeoutError:
            pass
        return web.json_response({"data": []})

    upstream.on("GET", "/v1/models", silent)
    provider = provider_for(upstream)
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as info:
            await provider.probe(0.3)
    finally:
        release.set()
        await provider.aclose()
    assert info.value.kind == "network"
    assert time.monotonic() - started < 2.0


async def test_offline_models_are_claude_with_200k_windows_and_vision() -> None:
    provider = make_provider({"models": ["claude-custom-1"]}, name="anthropic")
    models = await provider.list_models()
    ids = [m.id for m in models]
    assert "claude-sonnet-4-5" in ids
    assert "claude-custom-1" in ids
    assert all(m.context_window == 200_000 and m.vision for m in models)


# --- declaration and settings --------------------------------------------------------------


def test_the_spec_declares_anthropic() -> None:
    spec = hermes_model_providers()
    assert spec.name == "anthropic"
    assert spec.env_vars["api_key"] == "ANTHROPIC_API_KEY"
    assert spec.settings_model == "hermes_anthropic.settings:AnthropicSettings"
    assert spec.requires_key is True


@pytest.mark.parametrize("suffix", ["", "/", "/v1"])
async def test_base_url_with_or_without_v1(upstream: FakeUpstream, suffix: str) -> None:
    upstream.stream(PATH, text_reply("ok"))
    await collect(provider_for(upstream, base_url=upstream.url + suffix), hello())
    assert upstream.last().path == PATH


def test_settings_reject_unknown_keys() -> None:
    from pydantic import ValidationError

    from hermes_anthropic.settings import AnthropicSettings

    with pytest.raises(ValidationError):
        AnthropicSettings.model_validate({"apikey": "x"})
    assert AnthropicSettings.model_validate({"api_key": " "}).api_key is None
    assert KEY not in repr(AnthropicSettings.model_validate({"api_key": KEY}))


def test_importing_the_plugin_and_listing_models_is_cheap() -> None:
    import subprocess
    import sys

    code = (
        "import asyncio, sys\n"
        "import hermes_anthropic.plugin as p\n"
        "assert 'pydantic' not in sys.modules, 'plugin.py imported pydantic'\n"
        "provider = p.hermes_model_providers().factory({}, name='anthropic', preset=None)\n"
        "asyncio.run(provider.list_models())\n"
        "assert 'aiohttp' not in sys.modules, 'offline use imported aiohttp'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
