"""The ``openai`` provider against a fake OpenAI-compatible server on loopback.

What it shares with the other HTTP providers (HTTP errors, stalls, probes, secrets) is tested
once per vendor in ``test_http_providers``; this module covers the chat completions wire format,
chunk decoding, OpenAI's own failure codes, presets and custom endpoints.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from hermes_core import (
    ChatMessage,
    ChatRequest,
    Chunk,
    FinishChunk,
    ImagePart,
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
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream, openai_frame
from tests.providers.vendors import OPENAI, collect, delta, failure, usage

KEY = OPENAI.key
hello = OPENAI.hello
provider_for = OPENAI.provider


# --- streaming -------------------------------------------------------------------------------


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


async def test_a_whole_completion_of_the_wrong_shape_is_a_network_error(upstream: FakeUpstream) -> None:
    upstream.json("POST", "/v1/chat/completions", [1, 2, 3])
    error, seen = await failure(provider_for(upstream), hello())
    assert seen == []
    assert error.kind == "network" and not error.retryable


# --- OpenAI's failure codes ------------------------------------------------------------------


async def test_429_for_an_exhausted_quota_is_not_retried(upstream: FakeUpstream) -> None:
    upstream.json(
        "POST",
        "/v1/chat/completions",
        {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}},
        status=429,
    )
    error, _ = await failure(provider_for(upstream), hello())
    assert (error.kind, error.retryable) == ("rate_limit", False)


@pytest.mark.parametrize(
    ("frame", "kind", "retryable", "status"),
    [
        (openai_frame({"error": {"message": "Provider overloaded", "code": 502}}), "upstream", True, 502),
        (openai_frame({"error": {"message": "Provider overloaded", "code": 429}}), "rate_limit", True, 429),
        (
            openai_frame({"error": {"message": "Provider overloaded", "code": "rate_limit_exceeded"}}),
            "rate_limit",
            True,
            None,
        ),
        (openai_frame({"error": {"message": "Provider overloaded", "status": 401}}), "auth", False, 401),
        (openai_frame({"error": {"message": "Provider overloaded", "code": 400}}), "upstream", False, 400),
        (b'event: error\ndata: {"message": "Provider overloaded"}\n\n', "upstream", True, None),
    ],
    ids=["status-502", "status-429", "rate-limit-code", "error-status-401", "status-400", "error-event"],
)
async def test_an_error_inside_the_stream_is_read_by_its_status(
    upstream: FakeUpstream, frame: bytes, kind: str, retryable: bool, status: int | None
) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="par"), frame])
    error, seen = await failure(provider_for(upstream), hello())
    assert seen == [TextChunk("par")]
    assert (error.kind, error.retryable, error.status) == (kind, retryable, status)
    assert "mid-stream: Provider overloaded" in error.message


async def test_a_choice_finishing_with_error_is_an_upstream_error(upstream: FakeUpstream) -> None:
    upstream.stream("/v1/chat/completions", [delta(content="par"), delta(finish_reason="error")])
    error, seen = await failure(provider_for(upstream), hello())
    assert seen == [TextChunk("par")]
    assert (error.kind, error.retryable) == ("upstream", True)


# --- models ----------------------------------------------------------------------------------


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
    assert upstream.requests[-1].headers["Authorization"] == f"Bearer {KEY}"  # the probe


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


# --- presets and custom providers ------------------------------------------------------------


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
