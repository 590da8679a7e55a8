"""Test the notes plugin with the kit in hermes_core.testing: no network, no disk outside tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_notes import plugin

from hermes_core import (
    ChatRequest,
    FinishChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    ToolCompleted,
)
from hermes_core.testing import FakeProvider, FakeProviderPlugin, ScriptedAnswerer, make_kernel


def test_the_plugin_registers_its_records() -> None:
    kernel = make_kernel(plugin)  # strict: a broken hook fails here
    assert "add_note" in kernel.registry.tools
    assert kernel.registry.command("notes") is not None


async def test_notes_shows_nothing_then_the_notes(tmp_path: Path) -> None:
    kernel = make_kernel(plugin, entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="test", cwd=tmp_path)
        empty = await kernel.dispatch_slash(session, "/notes", surface="cli")
        (tmp_path / "NOTES.md").write_text("- buy milk\n", encoding="utf-8")
        full = await kernel.dispatch_slash(session, "/notes", surface="cli")
    assert empty is not None and empty.output == "no notes yet"
    assert full is not None and full.output == "- buy milk"


def call_add_note_once(request: ChatRequest) -> list[object]:
    """A scripted model: ask for add_note, then answer in words once the tool result is back."""
    if request.messages[-1].role == "tool":
        return [TextChunk("noted it"), FinishChunk("stop")]
    call = ToolCallRequest(id="call-1", name="add_note", arguments=json.dumps({"text": "ship it"}))
    return [ToolCallChunk(call), FinishChunk("tool_calls")]


async def run_one_turn(tmp_path: Path, answer: str) -> tuple[list[object], ScriptedAnswerer, FakeProvider]:
    provider = FakeProvider(call_add_note_once)
    kernel = make_kernel(plugin, FakeProviderPlugin(provider), settings={"model": "fake:model"})
    async with kernel.running():
        # The "default" approval profile asks before an edit: the answerer plays the user.
        session = await kernel.open_session(source="embed", owner="test", cwd=tmp_path, profile="default")
        answerer = ScriptedAnswerer(kernel, {"approval": answer})
        events = await answerer.run(
            await session.submit("remember to ship it", owner="test", answerable=answerer.kinds)
        )
    return events, answerer, provider


async def test_the_model_adds_a_note_once_the_user_approves(tmp_path: Path) -> None:
    events, answerer, provider = await run_one_turn(tmp_path, "once")
    assert [q.tool_name for q in answerer.asked] == ["add_note"]
    done = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(e.result_text, e.is_error) for e in done] == [("noted in NOTES.md", False)]
    assert (tmp_path / "NOTES.md").read_text(encoding="utf-8") == "- ship it\n"
    assert provider.requests[-1].messages[-1].content == "noted in NOTES.md"


async def test_a_denied_note_is_not_written(tmp_path: Path) -> None:
    events, answerer, _provider = await run_one_turn(tmp_path, "deny")
    assert len(answerer.asked) == 1
    assert [e.is_error for e in events if isinstance(e, ToolCompleted)] == [True]
    assert not (tmp_path / "NOTES.md").exists()


async def test_the_mock_model_can_call_it_without_asking_under_accept_edits(tmp_path: Path) -> None:
    kernel = make_kernel(plugin, entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        session = await kernel.open_session(
            source="embed", owner="test", cwd=tmp_path, profile="accept_edits"
        )
        answerer = ScriptedAnswerer(kernel, {})  # any question would fail the test
        prompt = '[[tool add_note {"text": "from the mock"}]]'
        await answerer.run(await session.submit(prompt, owner="test", answerable=answerer.kinds))
    assert (tmp_path / "NOTES.md").read_text(encoding="utf-8") == "- from the mock\n"
