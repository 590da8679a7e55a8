"""Tool calls in a turn: order of events, approvals, questions, denials
(docs/reference/core.md#events, #questions, #approvals, #tools)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

from hermes_core import (
    ALL_KINDS,
    Kernel,
    QuestionClosed,
    QuestionRequested,
    ToolAnnounced,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
)
from hermes_core.testing import MemorySettingsStore, make_kernel
from tests.core.conftest import collect
from tests.timing import eventually


def tool(name: str, **args: Any) -> str:
    return f"[[tool {name} {json.dumps(args)}]]"


async def answer_all(kernel: Kernel, turn: Any, choice: str) -> list[Any]:
    """Collect a turn's events, answering every question with ``choice``."""
    events = []
    async for ev in turn.events():
        events.append(ev)
        if isinstance(ev, QuestionRequested):
            assert kernel.answer(ev.request_id, choice) == "ok"
    return events


async def test_event_order_for_an_asked_call(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    turn = await session.submit(
        "write " + tool("write_file", path="new.txt", content="hi\n"), owner="me", answerable=ALL_KINDS
    )
    events = await answer_all(kernel, turn, "once")
    kinds = [
        type(e).__name__
        for e in events
        if type(e).__name__ not in ("SessionChanged", "TextDelta", "UsageUpdated", "SegmentStarted")
    ]
    assert kinds == [
        "TurnStarted",
        "ToolAnnounced",
        "ToolDecision",
        "QuestionRequested",
        "QuestionClosed",
        "ToolExecuting",
        "ToolCompleted",
        "TurnCompleted",
    ]
    announced = next(e for e in events if isinstance(e, ToolAnnounced))
    assert announced.call_id.startswith("tc_") and announced.kind == "edit"
    assert announced.paths == (str(workspace / "new.txt"),)
    assert announced.proposed_change is not None and announced.proposed_change.old_text is None
    question = next(e for e in events if isinstance(e, QuestionRequested))
    assert question.kind == "approval" and question.call_id == announced.call_id
    assert question.choices == ("once", "session", "always", "deny")
    assert question.approval_keys == (f"write_file:{workspace / 'new.txt'}",)
    assert len(question.request_id) == 12
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert not done.is_error and done.file_change is not None and done.file_change.new_text == "hi\n"
    assert (workspace / "new.txt").read_text() == "hi\n"
    assert events[-1].text.startswith("Done: ")


async def test_call_ids_are_core_ids_and_rows_keep_provider_ids(kernel: Kernel, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = await collect(
        await session.submit(
            tool("read_file", path="a.txt") + " " + tool("list_dir"), owner="me", answerable=ALL_KINDS
        )
    )
    announced = [e for e in events if isinstance(e, ToolAnnounced)]
    assistant = next(r for r in session.rows if r.role == "assistant" and r.tool_calls)
    assert [e.call_id for e in announced] == [f"tc_{assistant.id}_0", f"tc_{assistant.id}_1"]
    assert all(c.provider_call_id.startswith("mock_") for c in assistant.tool_calls)
    tool_rows = [r for r in session.rows if r.role == "tool"]
    assert [r.call_id for r in tool_rows] == [e.call_id for e in announced]


async def test_deny_then_same_effect_is_refused_without_asking(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    text = "[[rounds 2]] " + tool("write_file", path="x.txt", content="1")
    events = await answer_all(kernel, await session.submit(text, owner="me", answerable=ALL_KINDS), "deny")
    questions = [e for e in events if isinstance(e, QuestionRequested)]
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert len(questions) == 1  # the second round is refused without asking
    assert all(c.is_error for c in completed)
    assert "declined" in completed[0].result_text
    assert completed[1].result_text.startswith("Denied earlier in this turn")
    assert not (workspace / "x.txt").exists()
    assert not any(isinstance(e, ToolExecuting) for e in events)


async def test_after_a_denial_other_edits_ask_even_under_accept_edits(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="accept_edits")
    # A fixed ask (sensitive path) denied, then an ordinary edit, which accept_edits would run.
    text = (
        tool("write_file", path=".env", content="K=1") + " " + tool("write_file", path="ok.txt", content="2")
    )
    events = await answer_all(kernel, await session.submit(text, owner="me", answerable=ALL_KINDS), "deny")
    decisions = [e.decision for e in events if isinstance(e, ToolDecision)]
    assert decisions == ["ask", "ask"]
    assert not (workspace / "ok.txt").exists()


async def test_unanswerable_approval_is_closed_as_no_answerer(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    turn = await session.submit(
        tool("write_file", path="n.txt", content="z"), owner="me", answerable=frozenset()
    )
    events = await collect(turn)
    closed = [e for e in events if isinstance(e, QuestionClosed)]
    assert closed and closed[0].reason == "no_answerer" and closed[0].choice == "deny"
    assert not (workspace / "n.txt").exists()
    assert events[-1].outcome.reason == "stop"


async def test_approval_timeout_denies(tmp_path: Path, workspace: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "tools"], settings={"approvals": {"timeout_s": 0.1}})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
        events = await collect(
            await session.submit(
                tool("write_file", path="t.txt", content="z"), owner="me", answerable=ALL_KINDS
            )
        )
        closed = next(e for e in events if isinstance(e, QuestionClosed))
        assert closed.reason == "timeout"
        request = next(e for e in events if isinstance(e, QuestionRequested))
        assert kernel.answer(request.request_id, "once") == "expired"
        assert kernel.answer("000000000000", "once") == "unknown"
        assert not (workspace / "t.txt").exists()


async def test_session_choice_remembers_keys_for_the_live_session(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    await answer_all(
        kernel,
        await session.submit(tool("write_file", path="s.txt", content="1"), owner="me", answerable=ALL_KINDS),
        "session",
    )
    events = await collect(
        await session.submit(tool("write_file", path="s.txt", content="2"), owner="me", answerable=ALL_KINDS)
    )
    assert not any(isinstance(e, QuestionRequested) for e in events)
    assert (workspace / "s.txt").read_text() == "2"


async def test_always_choice_is_persisted_to_the_allowlist(
    kernel: Kernel, workspace: Path, tmp_path: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    await answer_all(
        kernel,
        await session.submit(
            tool("write_file", path="al.txt", content="1"), owner="me", answerable=ALL_KINDS
        ),
        "always",
    )
    allow = tmp_path / "data" / "approvals.json"
    data = json.loads(allow.read_text())
    assert data["version"] == 1 and f"write_file:{workspace / 'al.txt'}" in data["keys"]
    assert stat.S_IMODE(os.stat(allow).st_mode) == 0o600
    other = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    events = await collect(
        await other.submit(tool("write_file", path="al.txt", content="2"), owner="me", answerable=ALL_KINDS)
    )
    assert not any(isinstance(e, QuestionRequested) for e in events)


async def test_outside_workspace_read_asks_even_under_off_profile_except_off(
    kernel: Kernel, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret-ish\n")
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="accept_edits")
    events = await answer_all(
        kernel,
        await session.submit(tool("read_file", path=str(outside)), owner="me", answerable=ALL_KINDS),
        "deny",
    )
    assert [e.decision for e in events if isinstance(e, ToolDecision)] == ["ask"]
    await session.set_profile("off")
    events = await collect(
        await session.submit(tool("read_file", path=str(outside)), owner="me", answerable=ALL_KINDS)
    )
    assert [e.decision for e in events if isinstance(e, ToolDecision)] == ["allow"]
    assert "secret-ish" in next(e for e in events if isinstance(e, ToolCompleted)).result_text


async def test_unknown_tool_and_bad_arguments_are_error_results(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = await collect(await session.submit("[[tool no_such_tool {}]]", owner="me", answerable=ALL_KINDS))
    done = [e for e in events if isinstance(e, ToolCompleted)]
    assert done[0].is_error and "unknown tool" in done[0].result_text
    assert events[-1].outcome.reason == "stop"


async def test_interrupt_during_a_running_tool_completes_every_call(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="off")
    turn = await session.submit(tool("terminal", command="sleep 20"), owner="me", answerable=ALL_KINDS)
    events: list[Any] = []

    async def read() -> None:
        async for ev in turn.events():
            events.append(ev)

    reader = asyncio.create_task(read())
    await eventually(lambda: any(isinstance(e, ToolExecuting) for e in events))
    await session.interrupt()
    outcome = await turn.outcome
    await reader
    assert outcome.reason == "interrupted_by_user"
    done = [e for e in events if isinstance(e, ToolCompleted)]
    assert len(done) == 1 and done[0].is_error
    # the session works again and the history is valid for the model
    assert (await (await session.submit("next", owner="me", answerable=ALL_KINDS)).outcome).reason == "stop"


async def test_interrupt_closes_an_open_approval_as_interrupted(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    turn = await session.submit(
        tool("write_file", path="q.txt", content="1"), owner="me", answerable=ALL_KINDS
    )
    bus = session.subscribe()
    async for ev in bus:
        if isinstance(ev, QuestionRequested):
            break
    assert len(session.open_questions()) == 1
    await session.interrupt()
    assert (await turn.outcome).status == "interrupted"
    assert session.open_questions() == []
    closed = []
    while True:
        ev = await bus.__anext__()
        if isinstance(ev, QuestionClosed):
            closed.append(ev)
            break
    assert closed[0].reason == "interrupted"
    bus.close()


async def test_request_secret_stores_through_the_settings_store(tmp_path: Path, workspace: Path) -> None:
    store = MemorySettingsStore()
    kernel = make_kernel(entry_points=["mock", "tools"], store=store)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="accept_edits")
        turn = await session.submit("[[secret MY_TOKEN]]", owner="me", answerable=ALL_KINDS)
        events = []
        async for ev in turn.events():
            events.append(ev)
            if isinstance(ev, QuestionRequested) and ev.kind == "secret":
                assert ev.env_var == "MY_TOKEN" and ev.prompt == "Enter MY_TOKEN"
                kernel.answer(ev.request_id, "s3cr3t-value-123")
        assert store.env == {"MY_TOKEN": "s3cr3t-value-123"}
        result = next(e for e in events if isinstance(e, ToolCompleted))
        assert result.result_text.startswith("stored")
        assert all("s3cr3t-value-123" not in repr(e) for e in events if not isinstance(e, QuestionClosed))


async def test_clarify_is_hidden_when_the_turn_cannot_answer_it(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = await collect(
        await session.submit(
            tool("clarify", question="Which?"), owner="me", answerable=frozenset({"approval"})
        )
    )
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert done.is_error and "unknown tool" in done.result_text


async def test_clarify_question_round_trip(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit(
        tool("clarify", question="Which file?", choices=["a", "b"]), owner="me", answerable=ALL_KINDS
    )
    events = []
    async for ev in turn.events():
        events.append(ev)
        if isinstance(ev, QuestionRequested):
            assert ev.kind == "clarify" and ev.question == "Which file?" and ev.choices == ("a", "b")
            kernel.answer(ev.request_id, "b")
    assert events[-1].text == "Done: b" or "b" in events[-1].text
