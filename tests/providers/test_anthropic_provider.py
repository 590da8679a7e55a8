"""The ``anthropic`` provider against a fake Messages API server on loopback.

What it shares with the other HTTP providers (HTTP errors, stalls, probes, secrets) is tested
once per vendor in ``test_http_providers``; this module covers the Messages wire format, event
decoding, the in-stream ``error`` event types and the base URL forms.
"""

from __future__ import annotations

import base64

import pytest

from hermes_anthropic.plugin import hermes_model_providers, make_provider
from hermes_core import (
    ChatMessage,
    ChatRequest,
    FinishChunk,
    ImagePart,
    ReasoningChunk,
    TextChunk,
    TextPart,
    ToolCallChunk,
    ToolCallRequest,
    ToolSchema,
    UsageChunk,
)
from tests.providers.upstream_fakes import FakeUpstream, anthropic_frame
from tests.providers.vendors import (
    ANTHROPIC,
    block_delta,
    block_start,
    block_stop,
    collect,
    failure,
    finish,
    start,
    text,
    text_reply,
)

KEY = ANTHROPIC.key
PATH = ANTHROPIC.chat_path
hello = ANTHROPIC.hello
provider_for = ANTHROPIC.provider


# --- streaming -------------------------------------------------------------------------------


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


# --- errors inside the stream ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "kind", "retryable", "said"),
    [
        ("overloaded_error", "upstream", True, "upstream error mid-stream (overloaded_error)"),
        ("api_error", "upstream", True, "upstream error mid-stream (api_error)"),
        (None, "upstream", True, "upstream error mid-stream (error)"),
        ("rate_limit_error", "rate_limit", True, "rate limited mid-stream"),
        ("authentication_error", "auth", False, "authentication failed mid-stream"),
        ("permission_error", "auth", False, "authentication failed mid-stream"),
        ("invalid_request_error", "upstream", False, "upstream error mid-stream (invalid_request_error)"),
    ],
)
async def test_an_error_event_in_the_stream_is_read_by_its_type(
    upstream: FakeUpstream, error_type: str | None, kind: str, retryable: bool, said: str
) -> None:
    frames = [
        start(),
        block_start(0, {"type": "text", "text": ""}),
        text(0, "par"),
        anthropic_frame({"type": "error", "error": {"type": error_type, "message": "Something went wrong"}}),
    ]
    upstream.stream(PATH, frames)
    error, seen = await failure(provider_for(upstream), hello())
    assert seen == [TextChunk("par")]
    assert (error.kind, error.retryable, error.status) == (kind, retryable, None)
    assert error.message == f"anthropic: {said}: Something went wrong"


# --- models ----------------------------------------------------------------------------------


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
    received = upstream.requests[-1]  # the probe itself (last() skips probes)
    assert received.headers["x-api-key"] == KEY
    assert received.headers["anthropic-version"] == "2023-06-01"


async def test_offline_models_are_claude_with_200k_windows_and_vision() -> None:
    provider = make_provider({"models": ["claude-custom-1"]}, name="anthropic")
    models = await provider.list_models()
    ids = [m.id for m in models]
    assert "claude-sonnet-4-5" in ids
    assert "claude-custom-1" in ids
    assert all(m.context_window == 200_000 and m.vision for m in models)


# --- declaration and base URL ----------------------------------------------------------------


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
