"""Hosts that cannot answer never hang, and ``transport_kit.run_prompt`` routes questions to a
callback or denies them (docs/writing-transports.md)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    InvalidValue,
    Kernel,
    QuestionClosed,
    QuestionRequested,
    ToolCompleted,
    TurnCompleted,
    TurnStarted,
    event_payload,
    run_prompt,
)
from hermes_core.testing import make_kernel
from tests.core.conftest import collect
from tests.timing import scaled

WRITE = '[[tool write_file {"path": "out.txt", "content": "hi"}]]'


@pytest.fixture
async def kernel() -> AsyncIterator[Kernel]:
    # The approval timeout stays at its 300 s default: a host that waited for it would hang the test.
    k = make_kernel(entry_points=["mock", "tools"], settings={"model": "mock:echo"})
    async with k.running():
        yield k


async def test_submit_without_answerable_denies_an_approval_at_once(kernel: Kernel, workspace: Path) -> None:
    assert kernel.settings.approvals.timeout_s == 300
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, profile="default")
    events = await asyncio.wait_for(collect(await session.submit(WRITE, owner="me")), scaled(20))
    closed = [e for e in events if isinstance(e, QuestionClosed)]
    assert [(c.kind, c.reason, c.choice) for c in closed] == [("approval", "no_answerer", "deny")]
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert done.is_error
    assert "needs the user's approval, and nobody can be asked here" in done.result_text
    assert isinstance(events[-1], TurnCompleted) and events[-1].outcome.reason == "stop"
    assert not (workspace / "out.txt").exists()


async def test_run_prompt_without_a_callback_denies_and_every_event_encodes(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = [e async for e in run_prompt(session, WRITE, owner="me")]
    assert isinstance(events[0], TurnStarted) and isinstance(events[-1], TurnCompleted)
    assert [e.reason for e in events if isinstance(e, QuestionClosed)] == ["no_answerer"]
    payloads = [json.loads(json.dumps(event_payload(e))) for e in events]
    assert payloads[0]["type"] == "TurnStarted" and payloads[0]["session_id"] == session.id
    asked = next(p for p in payloads if p["type"] == "QuestionRequested")
    assert asked["kind"] == "approval" and asked["tool_name"] == "write_file"
    assert asked["paths"] == [str(workspace / "out.txt")]
    last = payloads[-1]
    assert last["outcome"]["status"] == "complete" and isinstance(last["usage"]["input"], int)


async def test_an_async_callback_approves(kernel: Kernel, workspace: Path) -> None:
    asked: list[QuestionRequested] = []

    async def approve(question: QuestionRequested) -> str:
        asked.append(question)
        await asyncio.sleep(0)
        return "once"

    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = [e async for e in run_prompt(session, WRITE, owner="me", answer=approve)]
    assert [q.tool_name for q in asked] == ["write_file"]
    closed = next(e for e in events if isinstance(e, QuestionClosed))
    assert (closed.reason, closed.choice) == ("answered", "once")
    assert (workspace / "out.txt").read_text() == "hi"


@pytest.mark.parametrize("verdict", [None, "deny"])
async def test_a_callback_saying_no_denies(kernel: Kernel, workspace: Path, verdict: str | None) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = [e async for e in run_prompt(session, WRITE, owner="me", answer=lambda q: verdict)]
    closed = next(e for e in events if isinstance(e, QuestionClosed))
    assert (closed.reason, closed.choice) == ("answered", "deny")
    assert not (workspace / "out.txt").exists()


async def test_a_callback_that_raises_is_logged_and_denies(
    kernel: Kernel, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(question: QuestionRequested) -> str:
        raise RuntimeError("the dialog crashed")

    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    with caplog.at_level(logging.ERROR, logger="hermes.transport"):
        events = [e async for e in run_prompt(session, WRITE, owner="me", answer=broken)]
    assert next(e for e in events if isinstance(e, QuestionClosed)).choice == "deny"
    assert any("the dialog crashed" in (r.exc_text or "") for r in caplog.records)


async def test_clarify_goes_to_the_callback_only_when_its_kind_is_handled(
    kernel: Kernel, workspace: Path
) -> None:
    prompt = '[[tool clarify {"question": "Which one?", "choices": ["a", "b"]}]]'
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = [e async for e in run_prompt(session, prompt, owner="me", answer=lambda q: "b")]
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert not done.is_error and "b" in done.result_text
    # Approvals only: the clarify tool is not even offered, so the mock's call is unknown.
    events = [
        e async for e in run_prompt(session, prompt, owner="me", answer=lambda q: "b", kinds={"approval"})
    ]
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert done.is_error and "unknown tool" in done.result_text


async def test_stopping_early_interrupts_the_turn(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    watch = session.subscribe()
    stream = run_prompt(session, "slow [[tokens 500]] [[delay 50]]", owner="me")
    async for event in stream:
        if isinstance(event, TurnStarted):
            break
    await stream.aclose()  # returns once the turn has ended
    assert not session.busy
    ended = [e async for e in _until_completed(watch)]
    assert isinstance(ended[-1], TurnCompleted)
    assert ended[-1].outcome.reason == "interrupted_by_system"
    follow = [e async for e in run_prompt(session, "next", owner="me")]
    assert follow[-1].outcome.reason == "stop"


async def _until_completed(watch: Any) -> AsyncIterator[Any]:
    async for event in watch:
        yield event
        if isinstance(event, TurnCompleted):
            watch.close()
            return


async def test_an_unknown_kind_is_refused(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    with pytest.raises(InvalidValue, match="kinds"):
        async for _ in run_prompt(session, "hi", owner="me", answer=lambda q: "once", kinds={"approvals"}):
            pass
