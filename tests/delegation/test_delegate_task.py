"""``delegate_task`` through a real kernel and the mock model (docs/delegation.md)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core import (
    ALL_KINDS,
    BackgroundCompleted,
    Kernel,
    QuestionRequested,
    Session,
    SubagentEvent,
    ToolCompleted,
)
from tests.timing import eventually, scaled


def call(args: dict[str, Any]) -> str:
    """A prompt making the mock call ``delegate_task`` with ``args``."""
    return f"[[tool delegate_task {json.dumps(args)}]]"


async def run(session: Session, prompt: str, **options: Any) -> tuple[list[Any], Any]:
    turn = await session.submit(prompt, owner="t", **options)
    events = [ev async for ev in turn.events()]
    return events, await turn.outcome


def results(events: list[Any]) -> list[dict[str, Any]]:
    done = [e for e in events if isinstance(e, ToolCompleted) and e.name == "delegate_task"]
    assert len(done) == 1, done
    return json.loads(done[0].result_text)["results"]  # type: ignore[no-any-return]


async def test_a_single_task_runs_in_a_child_session_with_its_own_id(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    events, outcome = await run(parent, call({"goal": "count [[tokens 3]]", "context": "be brief"}))
    assert outcome.status == "complete"
    [res] = results(events)
    assert res["status"] == "completed" and res["summary"] == "t0 t1 t2"
    assert res["error"] is None and res["tool_calls"] == 0
    assert res["tokens"]["output"] == 3 and res["tokens"]["input"] > 0
    assert res["duration_s"] >= 0 and res["model"] == "mock:echo"
    child_id = res["subagent_id"]
    assert child_id != parent.id
    subs = [e for e in events if isinstance(e, SubagentEvent)]
    kinds = [e.kind for e in subs]
    assert kinds[:2] == ["spawn_requested", "start"] and kinds[-1] == "complete"
    assert "progress" in kinds
    assert {(e.subagent_id, e.parent_id, e.depth, e.session_id) for e in subs} == {
        (child_id, parent.id, 1, parent.id)
    }
    assert subs[-1].status == "completed" and subs[-1].goal == "count [[tokens 3]]"
    assert subs[-1].payload["summary"] == "t0 t1 t2"
    # A real, stored session: its own conversation, linked to the parent, closed once done.
    record = await kernel.sessions.find(child_id)
    assert record is not None and record.parent_session_id == parent.id and record.source == "tool"
    stored = await kernel.sessions.stored(child_id)
    assert [r.role for r in stored.rows] == ["user", "assistant"]
    assert stored.rows[0].content == "count [[tokens 3]]\n\nContext:\nbe brief"
    assert kernel.sessions.get(child_id) is None
    # The child's usage is part of the parent's.
    assert parent.usage.calls == 3  # two parent calls and the child's one


async def test_a_batch_runs_in_parallel(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    goal = "[[tokens 8]] [[delay 60]] work"
    started = time.monotonic()
    events, outcome = await run(parent, call({"tasks": [{"goal": f"{goal} {i}"} for i in range(3)]}))
    wall = time.monotonic() - started
    assert outcome.status == "complete"
    res = results(events)
    assert [r["task_index"] for r in res] == [0, 1, 2]
    assert [r["status"] for r in res] == ["completed"] * 3
    assert len({r["subagent_id"] for r in res}) == 3
    # Sequential would take the sum; parallel takes about the slowest child.
    assert wall < 0.75 * sum(r["duration_s"] for r in res), (wall, res)
    counts = {e.task_index for e in events if isinstance(e, SubagentEvent)}
    assert counts == {0, 1, 2}
    assert {e.task_count for e in events if isinstance(e, SubagentEvent)} == {3}


async def test_limits_give_the_model_a_clear_error(make: Callable[..., Kernel], workspace: Path) -> None:
    kernel = make(delegation={"max_concurrent_children": 2})
    async with kernel.running():
        parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        events, _ = await run(parent, call({"tasks": [{"goal": "a"}, {"goal": "b"}, {"goal": "c"}]}))
        [done] = [e for e in events if isinstance(e, ToolCompleted)]
        assert done.is_error and "max_concurrent_children 2" in done.result_text
        assert not [e for e in events if isinstance(e, SubagentEvent)]
        # Depth 1 (flat): a child never sees delegate_task, even as an orchestrator.
        inner = call({"goal": "deeper [[tokens 2]]"})
        events, _ = await run(parent, call({"goal": inner, "role": "orchestrator"}))
        [res] = results(events)
        assert res["summary"] == "Done: unknown tool: delegate_task"
        # Bad input is refused before anything starts.
        events, _ = await run(parent, call({"goal": "x", "toolsets": ["nope"]}))
        [done] = [e for e in events if isinstance(e, ToolCompleted)]
        assert done.is_error and "unknown toolsets ['nope']" in done.result_text


async def test_an_orchestrator_delegates_within_max_spawn_depth(
    make: Callable[..., Kernel], workspace: Path
) -> None:
    kernel = make(delegation={"max_spawn_depth": 2})
    async with kernel.running():
        parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        grandchild = call({"goal": "leaf work [[tokens 2]]"})
        events, outcome = await run(parent, call({"goal": grandchild, "role": "orchestrator"}))
        assert outcome.status == "complete"
        [res] = results(events)
        inner = json.loads(res["summary"].removeprefix("Done: "))
        assert inner["results"][0]["summary"] == "t0 t1"
        tree = kernel.sessions.children.children(parent.id, recursive=True)
        assert [s.depth for s in tree] == [1, 2]
        assert tree[1].parent_id == tree[0].subagent_id
        # A leaf at depth 2 may not go deeper: its delegate_task is hidden and refused.
        too_deep = call(
            {"goal": call({"goal": call({"goal": "x"}), "role": "orchestrator"}), "role": "orchestrator"}
        )
        events, _ = await run(parent, too_deep)
        [res] = results(events)
        assert "unknown tool: delegate_task" in res["summary"]


async def test_interrupting_the_parent_interrupts_every_child(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    bus = parent.subscribe()
    slow = "[[tokens 2000]] [[delay 50]] slow"
    turn = await parent.submit(call({"tasks": [{"goal": slow}, {"goal": slow}]}), owner="t")
    seen: list[SubagentEvent] = []

    async def collect() -> None:
        async for ev in bus:
            if isinstance(ev, SubagentEvent):
                seen.append(ev)

    reader = asyncio.create_task(collect())
    await eventually(
        lambda: len({e.subagent_id for e in seen if e.kind == "progress"}) == 2, what="both children"
    )
    ids = {e.subagent_id for e in seen}
    started = time.monotonic()
    await parent.interrupt()
    outcome = await turn.outcome
    assert outcome.status == "interrupted"
    await eventually(
        lambda: {e.subagent_id for e in seen if e.kind == "complete"} == ids, what="terminal events"
    )
    assert time.monotonic() - started < scaled(2.0)
    assert {e.status for e in seen if e.kind == "complete"} == {"interrupted"}
    assert all(kernel.sessions.get(i) is None for i in ids)
    assert kernel.sessions.children.children(parent.id, active_only=True) == []
    reader.cancel()


async def test_a_childs_approval_reaches_the_parents_host(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="default")
    bus = parent.subscribe()
    write = '[[tool write_file {"path": "child.txt", "content": "from child"}]]'
    turn = await parent.submit(call({"goal": write}), owner="t", answerable=ALL_KINDS)
    question = None
    async for ev in bus:
        if isinstance(ev, QuestionRequested):
            question = ev
            break
    assert question is not None and question.kind == "approval" and question.session_id == parent.id
    child = kernel.sessions.children.get(question.task_id or "")
    assert child is not None and child.parent_id == parent.id
    assert [q.request_id for q in parent.open_questions()] == [question.request_id]
    assert kernel.answer(question.request_id, "once") == "ok"
    await turn.outcome
    assert (workspace / "child.txt").read_text() == "from child"
    bus.close()


async def test_with_nobody_to_answer_a_childs_dangerous_call_is_denied(
    kernel: Kernel, workspace: Path
) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="default")
    write = '[[tool write_file {"path": "child.txt", "content": "x"}]]'
    events, _ = await run(parent, call({"goal": write}), answerable=frozenset())
    [res] = results(events)
    assert res["status"] == "completed" and res["tool_calls"] == 1
    assert not (workspace / "child.txt").exists()


async def test_steer_reaches_a_running_child(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="off")
    bus = parent.subscribe()
    goal = '[[tool terminal {"command": "sleep 0.5; echo slept"}]]'
    turn = await parent.submit(call({"goal": goal}), owner="t")
    child_id = None
    async for ev in bus:
        if isinstance(ev, SubagentEvent) and ev.kind == "tool" and ev.payload["phase"] == "start":
            child_id = ev.subagent_id
            break
    assert child_id is not None
    assert kernel.sessions.children.steer(child_id, "mind the tests") == ("queued", None)
    assert kernel.sessions.children.steer("nope", "x") == ("rejected", "not_running")
    await turn.outcome
    assert kernel.sessions.children.get(child_id).summary.endswith("/ Steer: mind the tests")  # type: ignore[union-attr]
    bus.close()


async def test_background_delegation_completes_after_the_parents_turn(
    kernel: Kernel, workspace: Path
) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    bus = parent.subscribe()
    events, outcome = await run(parent, call({"goal": "[[tokens 5]] [[delay 40]] later", "background": True}))
    assert outcome.status == "complete"
    [done] = [e for e in events if isinstance(e, ToolCompleted)]
    body = json.loads(done.result_text)
    assert body["status"] == "started" and body["delegation_id"].startswith("dg_")
    finished = None
    async for ev in bus:
        if isinstance(ev, BackgroundCompleted):
            finished = ev
            break
    assert finished is not None and finished.task_id == body["delegation_id"]
    assert finished.status == "complete" and finished.text == "t0 t1 t2 t3 t4"
    assert kernel.sessions.children.get(body["subagent_id"]).status == "completed"  # type: ignore[union-attr]
    bus.close()


async def test_closing_the_parent_closes_its_children(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    events, _ = await run(parent, call({"goal": "[[tokens 5000]] [[delay 50]] forever", "background": True}))
    child_id = json.loads(next(e for e in events if isinstance(e, ToolCompleted)).result_text)["subagent_id"]
    assert kernel.sessions.get(child_id) is not None
    await parent.close()
    assert kernel.sessions.get(child_id) is None
    assert kernel.sessions.children.get(child_id).status == "interrupted"  # type: ignore[union-attr]
    # The child's transcript stays stored under its parent, out of the session list.
    record = await kernel.sessions.find(child_id)
    assert record is not None and record.parent_session_id == parent.id and record.source == "tool"
    assert (await kernel.sessions.stored(child_id)).rows[0].content.startswith("[[tokens 5000]]")
    listed = {r.id for r in (await kernel.sessions.list()).sessions}
    assert parent.id in listed and child_id not in listed


async def test_pause_refuses_new_delegations(kernel: Kernel, workspace: Path) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    kernel.sessions.children.set_paused(parent.id, True)
    events, _ = await run(parent, call({"goal": "x"}))
    [done] = [e for e in events if isinstance(e, ToolCompleted)]
    assert done.is_error and "paused" in done.result_text


async def test_a_background_result_reaches_a_busy_parent_at_its_next_tool_boundary(
    kernel: Kernel, workspace: Path
) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="off")
    prompt = call({"goal": "quick [[tokens 2]]", "background": True}) + (
        ' [[tool terminal {"command": "sleep 1; echo slept"}]]'
    )
    events, outcome = await run(parent, prompt)
    assert outcome.status == "complete"
    done = next(e for e in events if type(e).__name__ == "TurnCompleted")
    delegation_id = json.loads(next(e for e in events if isinstance(e, ToolCompleted)).result_text)[
        "delegation_id"
    ]
    assert done.text.endswith(f"/ Background: [delegation {delegation_id} completed] t0 t1"), done.text
    assert done.pending_steer is None


async def test_a_background_result_that_misses_the_last_tool_boundary_reaches_the_next_turn(
    kernel: Kernel, workspace: Path
) -> None:
    parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    bus = parent.subscribe()
    # The parent's answer after the tool call streams slowly and calls no further tool: the
    # child ends while the parent is busy, with no tool boundary left in that turn.
    prompt = call({"goal": "quick [[tokens 2]]", "background": True}) + " [[delay 400]]"
    events, outcome = await run(parent, prompt)
    assert outcome.status == "complete"
    delegation_id = json.loads(next(e for e in events if isinstance(e, ToolCompleted)).result_text)[
        "delegation_id"
    ]
    seen = []
    async for ev in bus:
        seen.append(type(ev).__name__)
        if type(ev).__name__ == "TurnCompleted":
            break
    # The host got the event, and got it while the parent's turn was still running.
    assert "BackgroundCompleted" in seen, seen
    first = next(e for e in events if type(e).__name__ == "TurnCompleted")
    assert "Background" not in first.text and first.pending_steer is None
    await run(parent, "what came back?")
    replies = [r.content for r in parent.rows if r.role == "assistant"]
    assert replies[-1].endswith(f" / Background: [delegation {delegation_id} completed] t0 t1"), replies
    await run(parent, "and now?")
    replies = [r.content for r in parent.rows if r.role == "assistant"]
    assert "Background" not in replies[-1]  # told exactly once
    bus.close()


async def test_an_idle_parents_next_turn_reads_a_background_result(workspace: Path) -> None:
    from hermes_core import ChatRequest, FinishChunk, TextChunk, ToolCallChunk, ToolCallRequest
    from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel

    def script(request: ChatRequest) -> list[Any]:
        last = request.messages[-1]
        if last.role == "user" and last.content == "start it":
            args = json.dumps({"goal": "child job", "background": True})
            return [ToolCallChunk(ToolCallRequest("c1", "delegate_task", args)), FinishChunk("tool_calls")]
        if last.role == "user" and last.content == "child job":
            return [TextChunk("the child found 42"), FinishChunk("stop")]
        return [TextChunk("noted"), FinishChunk("stop")]

    provider = FakeProvider(script)
    kernel = make_kernel(
        FakeProviderPlugin(provider), entry_points=["delegation"], settings={"model": "fake:model"}
    )
    async with kernel.running():
        parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        bus = parent.subscribe()
        await (await parent.submit("start it", owner="t")).outcome
        async for ev in bus:
            if isinstance(ev, BackgroundCompleted):
                break
        await (await parent.submit("what came back?", owner="t")).outcome
        await (await parent.submit("and now?", owner="t")).outcome
        bus.close()
    systems = [
        r.system for r in provider.requests if r.messages[-1].content in ("what came back?", "and now?")
    ]
    assert "[delegation dg_" in systems[0] and "completed] the child found 42" in systems[0]
    assert "Background delegations" not in systems[1]  # told once
