"""What the provider tests need to know about each vendor: frames, error bodies, paths and keys.

The per-vendor test modules use the frame builders directly; ``test_http_providers`` runs the
behaviour both providers share once per :class:`Vendor`.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from hermes_anthropic.plugin import make_provider as make_anthropic
from hermes_core import ChatMessage, ChatRequest, Chunk, ProviderError
from hermes_openai.plugin import make_provider as make_openai
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream, anthropic_frame, openai_frame

# --- OpenAI chat completion chunks --------------------------------------------------------------


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


def openai_reply(text: str) -> list[bytes]:
    """Return a whole streamed completion that says ``text``."""
    return [delta(content=text), delta(finish_reason="stop"), OPENAI_DONE]


def openai_error(code: str, message: str) -> dict[str, Any]:
    """Return an OpenAI error body."""
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


# --- Anthropic Messages events ------------------------------------------------------------------


def start(input_tokens: int = 10, **counts: int) -> bytes:
    """Return ``message_start`` with the given input token counts."""
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
                "usage": {"input_tokens": input_tokens, "output_tokens": 1, **counts},
            },
        }
    )


def block_start(index: int, block: dict[str, Any]) -> bytes:
    """Return ``content_block_start`` for ``block``."""
    return anthropic_frame({"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, change: dict[str, Any]) -> bytes:
    """Return ``content_block_delta`` carrying ``change``."""
    return anthropic_frame({"type": "content_block_delta", "index": index, "delta": change})


def text(index: int, value: str) -> bytes:
    """Return a ``text_delta`` for block ``index``."""
    return block_delta(index, {"type": "text_delta", "text": value})


def block_stop(index: int) -> bytes:
    """Return ``content_block_stop``."""
    return anthropic_frame({"type": "content_block_stop", "index": index})


def finish(reason: str, output_tokens: int) -> list[bytes]:
    """Return ``message_delta`` with the stop reason, then ``message_stop``."""
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
    """Return a whole message of one text block made of ``pieces``."""
    frames = [start(), block_start(0, {"type": "text", "text": ""})]
    frames += [text(0, piece) for piece in pieces]
    return [*frames, block_stop(0), *finish(reason, 5)]


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """Return an Anthropic error body (also the data of an in-stream ``error`` event)."""
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- the vendors --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vendor:
    """One provider plugin as the shared tests drive it.

    :param name: the provider name, also the id of the parametrized tests.
    :param root: the ``base_url`` for a fake upstream's URL.
    :param partial: frames that start a reply with the given text and never finish it.
    :param error_body: an error body of this vendor for an error code/type and a message.
    """

    name: str
    key: str
    key_variable: str
    key_header: str
    model: str
    chat_path: str
    models_path: str
    settings_ref: str
    make_provider: Callable[..., Any]
    root: Callable[[str], str]
    reply: Callable[[str], list[bytes]]
    partial: Callable[[str], list[bytes]]
    error_body: Callable[[str, str], dict[str, Any]]

    def provider(self, upstream: FakeUpstream, *, name: str | None = None, **settings: Any) -> Any:
        """Return a provider with this vendor's key aimed at ``upstream``."""
        values: dict[str, Any] = {
            "api_key": self.key,
            "base_url": self.root(upstream.url),
            "stall_timeout_s": 5.0,
        }
        values.update(settings)
        return self.make_provider(values, name=name or self.name)

    def hello(self, model: str | None = None, **fields: Any) -> ChatRequest:
        """Return a one-message request (to this vendor's default model unless named)."""
        messages = (ChatMessage(role="user", content="hi"),)
        return ChatRequest(model=model or self.model, messages=messages, **fields)

    def settings_model(self) -> Any:
        """Return the settings class the plugin declares."""
        module, _, name = self.settings_ref.partition(":")
        return getattr(importlib.import_module(module), name)


OPENAI = Vendor(
    name="openai",
    key="sk-test-9f8e7d6c5b4a39281706",
    key_variable="OPENAI_API_KEY",
    key_header="Authorization",
    model="gpt-4.1-mini",
    chat_path="/v1/chat/completions",
    models_path="/v1/models",
    settings_ref="hermes_openai.settings:OpenAISettings",
    make_provider=make_openai,
    root=lambda url: f"{url}/v1",
    reply=openai_reply,
    partial=lambda said: [delta(content=said)],
    error_body=openai_error,
)

ANTHROPIC = Vendor(
    name="anthropic",
    key="sk-ant-test-0123456789abcdef",
    key_variable="ANTHROPIC_API_KEY",
    key_header="x-api-key",
    model="claude-sonnet-4-5",
    chat_path="/v1/messages",
    models_path="/v1/models",
    settings_ref="hermes_anthropic.settings:AnthropicSettings",
    make_provider=make_anthropic,
    root=lambda url: url,
    reply=text_reply,
    partial=lambda said: [start(), block_start(0, {"type": "text", "text": ""}), text(0, said)],
    error_body=anthropic_error,
)

VENDORS = (OPENAI, ANTHROPIC)

# --- running a provider -------------------------------------------------------------------------


async def collect(provider: Any, request: ChatRequest) -> list[Chunk]:
    """Return every chunk of one stream, then close the provider."""
    try:
        return [chunk async for chunk in provider.stream(request)]
    finally:
        await provider.aclose()


async def failure(provider: Any, request: ChatRequest) -> tuple[ProviderError, list[Chunk]]:
    """Run a stream that must fail; return the error and the chunks seen before it."""
    seen: list[Chunk] = []
    try:
        with pytest.raises(ProviderError) as info:
            async for chunk in provider.stream(request):
                seen.append(chunk)
    finally:
        await provider.aclose()
    return info.value, seen


def assert_hidden(secrets: Sequence[str], error: ProviderError) -> None:
    """Assert no secret shows in the error's message, its text or its formatted traceback."""
    shown = "".join(traceback.format_exception(error))
    for secret in secrets:
        assert secret not in error.message
        assert secret not in str(error)
        assert secret not in shown
