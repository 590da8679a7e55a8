"""Stream chunks that are valid JSON of the wrong shape are a broken stream, never an empty answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_core import ProviderError, TextChunk
from tests.core.conftest import collect as collect_turn
from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream, openai_frame
from tests.providers.vendors import ANTHROPIC, OPENAI, Vendor, collect, failure, finish, start

OPENAI_SHAPES = {
    "choices-a-string": {"choices": "x"},
    "choice-a-string": {"choices": ["x"]},
    "delta-a-string": {"choices": [{"index": 0, "delta": "hi"}]},
    "content-a-number": {"choices": [{"index": 0, "delta": {"content": 5}}]},
    "content-a-list-of-strings": {"choices": [{"index": 0, "delta": {"content": ["hi"]}}]},
    "text-part-without-text": {"choices": [{"index": 0, "delta": {"content": [{"type": "text"}]}}]},
    "tool-calls-a-string": {"choices": [{"index": 0, "delta": {"tool_calls": "x"}}]},
    "finish-a-number": {"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]},
    "no-choice-at-all": {"id": "chatcmpl-1", "object": "chat.completion.chunk"},
}

ANTHROPIC_SHAPES = {
    "no-type": {"index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    "message-a-string": {"type": "message_start", "message": "x"},
    "delta-a-string": {"type": "content_block_delta", "index": 0, "delta": "hi"},
    "text-a-number": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    "index-a-string": {"type": "content_block_stop", "index": "0"},
    "block-a-list": {"type": "content_block_start", "index": 0, "content_block": []},
}


def openai_frames(payload: dict[str, object]) -> list[bytes]:
    # Everything else about the stream is right: it ends with a finish and [DONE].
    tail = openai_frame({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if "finish_reason" in str(payload) or "choices" not in payload:
        tail = b""
    return [openai_frame(payload), tail, OPENAI_DONE] if tail else [openai_frame(payload), OPENAI_DONE]


def anthropic_frames(payload: dict[str, object]) -> list[bytes]:
    frame = f"event: {payload.get('type', 'message')}\ndata: {json.dumps(payload)}\n\n"
    return [start(), frame.encode(), *finish("end_turn", 3)]


CASES = [(OPENAI, name, openai_frames(p)) for name, p in OPENAI_SHAPES.items()] + [
    (ANTHROPIC, name, anthropic_frames(p)) for name, p in ANTHROPIC_SHAPES.items()
]


@pytest.mark.parametrize(
    ("vendor", "frames"), [(v, f) for v, _, f in CASES], ids=[f"{v.name}-{n}" for v, n, _ in CASES]
)
async def test_a_wrong_shape_chunk_is_a_provider_error(
    upstream: FakeUpstream, vendor: Vendor, frames: list[bytes]
) -> None:
    upstream.stream(vendor.chat_path, frames)
    error, _ = await failure(vendor.provider(upstream), vendor.hello())
    assert isinstance(error, ProviderError)
    assert error.kind == "network"
    assert "malformed" in error.message or "no completion choice" in error.message


@pytest.mark.parametrize(
    ("vendor", "payload"),
    [(OPENAI, OPENAI_SHAPES["choices-a-string"]), (OPENAI, OPENAI_SHAPES["content-a-number"]),
     (ANTHROPIC, ANTHROPIC_SHAPES["text-a-number"])],
    ids=["openai-choices", "openai-content", "anthropic-text"],
)  # fmt: skip
async def test_a_turn_on_a_wrong_shape_stream_fails_as_provider_error(
    upstream: FakeUpstream, vendor: Vendor, payload: dict[str, object], tmp_path: Path
) -> None:
    frames = openai_frames(payload) if vendor is OPENAI else anthropic_frames(payload)
    upstream.stream(vendor.chat_path, frames)
    kernel = vendor_kernel(vendor, upstream)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        events = await collect_turn(await session.submit("hello", owner="me"))
    outcome = events[-1].outcome
    assert (outcome.status, outcome.reason, outcome.layer) == ("error", "provider_error", "provider")
    assert "malformed" in (outcome.message or "")
    assert len(upstream.requests) == 1


async def test_content_sent_as_typed_parts_is_read(upstream: FakeUpstream) -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
        {"type": "text", "text": "Hi"},
    ]
    frames = [openai_frame({"choices": [{"index": 0, "delta": {"content": parts}}]}), *OPENAI.reply("!")]
    upstream.stream(OPENAI.chat_path, frames)
    chunks = await collect(OPENAI.provider(upstream), OPENAI.hello())
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hi!"
