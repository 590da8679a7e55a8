"""Titles and ``/compress`` through real providers: the core builds the whole request itself.

A fake upstream on loopback answers the turns and then the core's own request; each test asserts
that request's exact body (the instruction as system prompt, the conversation as text in one user
message, an output limit) for the ``openai`` and the ``anthropic`` provider, and that the reply
becomes the title or the stored summary.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import SUMMARY_INSTRUCTION, TITLE_INSTRUCTION, ProviderError, Session
from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import (
    ANTHROPIC,
    OPENAI,
    VENDORS,
    Vendor,
    block_delta,
    block_start,
    block_stop,
    delta,
    finish,
    start,
)


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


@pytest.fixture(params=VENDORS, ids=[v.name for v in VENDORS])
def vendor(request: pytest.FixtureRequest) -> Vendor:
    return request.param


def reply(vendor: Vendor, text: str) -> list[bytes]:
    return vendor.reply(text)


def tool_call(vendor: Vendor, name: str, arguments: dict[str, Any]) -> list[bytes]:
    args = json.dumps(arguments)
    if vendor is OPENAI:
        function = {"name": name, "arguments": args}
        fragment = {"index": 0, "id": "call_1", "type": "function", "function": function}
        return [delta(tool_calls=[fragment]), delta(finish_reason="tool_calls"), OPENAI_DONE]
    return [
        start(),
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": args}),
        block_stop(0),
        *finish("tool_use", 5),
    ]


def expected_body(vendor: Vendor, system: str, text: str, limit: int) -> dict[str, Any]:
    """The exact body of the core's own request for ``vendor``."""
    if vendor is ANTHROPIC:
        return {
            "model": vendor.model,
            "max_tokens": limit,
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            "stream": True,
            "system": system,
        }
    return {
        "model": vendor.model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": limit,
    }


async def until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def turn(session: Session, text: str) -> Any:
    outcome = await (await session.submit(text, owner="me")).outcome
    assert outcome.reason == "stop", outcome
    return outcome


async def test_a_title_is_asked_for_with_an_instruction_and_a_limit(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path
) -> None:
    answers = [reply(vendor, "I will fix the build."), reply(vendor, '"Build repair"')]
    upstream.replies(vendor.chat_path, answers)
    kernel = vendor_kernel(vendor, upstream, titles={"refine": True})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        await turn(session, "fix the build please")
        await until(lambda: session.record.title_origin == "refined")
        assert session.record.title == "Build repair"
    assert len(upstream.requests) == 2
    text = (
        "Write a title for this conversation.\n\n<conversation>\n"
        '<message role="user">\nfix the build please\n</message>\n'
        '<message role="assistant">\nI will fix the build.\n</message>\n'
        "</conversation>"
    )
    assert upstream.requests[1].body == expected_body(vendor, TITLE_INSTRUCTION, text, 256)


async def test_compress_sends_one_valid_request_and_stores_the_reply(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    summary = "The user had a.txt read; it says hello."
    upstream.replies(
        vendor.chat_path,
        [
            tool_call(vendor, "read_file", {"path": "a.txt"}),
            reply(vendor, "It says hello."),
            reply(vendor, "You're welcome."),
            reply(vendor, summary),
        ],
    )
    kernel = vendor_kernel(vendor, upstream)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        await turn(session, "read a.txt please")
        await turn(session, "thanks")
        tool_row = next(r for r in session.rows if r.role == "tool")
        result = await session.compress(focus_topic="the file")
        history = await session.history()
    assert result.summary == summary
    assert history[0].display_kind == "summary" and history[0].content == summary
    assert [r.content for r in history[1:]] == ["thanks", "You're welcome."]
    assert len(upstream.requests) == 4
    text = (
        "Summarise this conversation.\n\n<conversation>\n"
        '<message role="user">\nread a.txt please\n</message>\n'
        '<message role="assistant">\n[called tool read_file with {"path": "a.txt"}]\n</message>\n'
        f'<message role="tool" name="read_file">\n{tool_row.content}\n</message>\n'
        '<message role="assistant">\nIt says hello.\n</message>\n'
        "</conversation>\n\nFocus the summary on: the file"
    )
    assert "hello" in tool_row.content
    assert upstream.requests[3].body == expected_body(vendor, SUMMARY_INSTRUCTION, text, 4096)


async def test_an_empty_summary_fails_compress_and_changes_nothing(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path
) -> None:
    upstream.replies(vendor.chat_path, [reply(vendor, "one"), reply(vendor, "two"), reply(vendor, "")])
    kernel = vendor_kernel(vendor, upstream)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        await turn(session, "first")
        await turn(session, "second")
        before = [(r.id, r.content) for r in await session.history()]
        with pytest.raises(ProviderError, match="no text"):
            await session.compress()
        assert [(r.id, r.content) for r in await session.history()] == before
        assert not [r for r in await session.history(include_archived=True) if not r.active]
