"""Background tasks (docs/reference/core.md#background-tasks-and-one-shot-calls): a separate agent, nothing in
the transcript."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hermes_core import ALL_KINDS, BackgroundCompleted, Kernel, QuestionClosed, QuestionRequested, SessionBusy


async def _next(bus: object, kind: type) -> object:
    async for ev in bus:  # type: ignore[attr-defined]
        if isinstance(ev, kind):
            return ev
    raise AssertionError("bus ended")


async def test_background_task_runs_tools_without_touching_the_transcript(
    kernel: Kernel, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("remember this\n")
    session = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    await (await session.submit("hello", owner="t")).outcome
    before = [r.id for r in await session.history()]
    bus = session.subscribe()
    task_id = session.background('[[tool read_file {"path": "notes.txt"}]]')
    assert task_id.startswith("bg_") and len(task_id) == 9
    done = await asyncio.wait_for(_next(bus, BackgroundCompleted), 10)
    assert done.task_id == task_id and done.status == "complete"  # type: ignore[attr-defined]
    assert "remember this" in done.text  # type: ignore[attr-defined]
    assert [r.id for r in await session.history()] == before
    bus.close()


async def test_background_questions_carry_task_id_and_survive_the_parent_interrupt(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="default")
    bus = session.subscribe()
    args = json.dumps({"path": "bg.txt", "content": "x"})
    task_id = session.background(f"[[tool write_file {args}]]", answerable=ALL_KINDS)
    question = await asyncio.wait_for(_next(bus, QuestionRequested), 10)
    assert question.task_id == task_id and question.kind == "approval"  # type: ignore[attr-defined]
    running = await session.submit("[[delay 20]] parent turn here", owner="t")
    await session.interrupt()
    await running.outcome
    assert [q.request_id for q in session.open_questions()] == [question.request_id]  # type: ignore[attr-defined]
    assert kernel.answer(question.request_id, "once") == "ok"  # type: ignore[attr-defined]
    done = await asyncio.wait_for(_next(bus, BackgroundCompleted), 10)
    assert done.status == "complete"  # type: ignore[attr-defined]
    assert (workspace / "bg.txt").read_text() == "x"
    bus.close()


async def test_a_background_task_without_answerable_kinds_is_denied_at_once(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="t", cwd=workspace, profile="default")
    bus = session.subscribe()
    session.background('[[tool write_file {"path": "nobody.txt", "content": "x"}]]')
    closed = await asyncio.wait_for(_next(bus, QuestionClosed), 10)
    assert (closed.reason, closed.choice) == ("no_answerer", "deny")  # type: ignore[attr-defined]
    done = await asyncio.wait_for(_next(bus, BackgroundCompleted), 10)
    assert done.status == "complete"  # type: ignore[attr-defined]
    assert not (workspace / "nobody.txt").exists()
    bus.close()


async def test_close_stops_background_tasks(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="default")
    bus = session.subscribe()
    session.background('[[tool write_file {"path": "never.txt", "content": "x"}]]', answerable=ALL_KINDS)
    await asyncio.wait_for(_next(bus, QuestionRequested), 10)
    await session.close()
    closed = [e async for e in bus if isinstance(e, QuestionClosed | BackgroundCompleted)]
    assert not (workspace / "never.txt").exists()
    assert any(isinstance(e, QuestionClosed) and e.reason == "closed" for e in closed)
    # the host hears that the task ended, before the session's bus ends
    assert [e.status for e in closed if isinstance(e, BackgroundCompleted)] == ["interrupted"]


async def test_at_most_four_background_tasks(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    for _ in range(4):
        session.background("[[delay 200]] slow one two")
    with pytest.raises(SessionBusy) as err:
        session.background("fifth")
    assert err.value.reason == "background_limit"
