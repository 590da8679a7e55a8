"""Checklist group G (cancellation, docs/reference/acp.md#cancellation) and the close/queue interplay."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.acp.client import RecordingClient
from tests.acp.conftest import Home
from tests.acp.helpers import calls, final, tool
from tests.timing import eventually, scaled


def _chunks(agent: Any, sid: str) -> int:
    return sum(1 for u in agent.updates(sid) if u.get("sessionUpdate") == "agent_message_chunk")


async def _start_prompt(agent: Any, sid: str, text: str) -> asyncio.Task[Any]:
    task = asyncio.create_task(agent.prompt(sid, text))
    task.chunks_before = _chunks(agent, sid)  # type: ignore[attr-defined]
    return task


async def _streaming(agent: Any, sid: str, task: asyncio.Task[Any]) -> None:
    """Wait until the turn ``task`` started has sent its first text chunk.

    Chunks of an earlier prompt of the session do not count: they would let the test go on
    before this prompt reached the agent.
    """
    before: int = task.chunks_before  # type: ignore[attr-defined]
    await eventually(lambda: _chunks(agent, sid) > before, what="the turn's first agent_message_chunk")


def _prompts_sent(agent: Any) -> int:
    return len([m for d, m in agent.frames if d == "out" and m.get("method") == "session/prompt"])


def _answered(agent: Any, request_id: Any) -> bool:
    return any(d == "out" and "method" not in m and m.get("id") == request_id for d, m in agent.frames)


async def test_cancel_while_streaming(spawn: Any, home: Home) -> None:
    """#32: cancel during a slow stream → cancelled quickly; the next prompt ends end_turn."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    task = await _start_prompt(agent, sid, "[[delay 200]] [[tokens 50]]")
    await _streaming(agent, sid, task)
    start = time.monotonic()
    await agent.notify("session/cancel", {"sessionId": sid})
    assert (await task) == {"stopReason": "cancelled"}
    assert time.monotonic() - start < scaled(1.0)
    assert (await agent.prompt(sid, "again"))["stopReason"] == "end_turn"


async def test_cancel_during_a_command_closes_the_call(spawn: Any, home: Home) -> None:
    """#32: cancel during `terminal sleep 30` → cancelled within 1 s, call failed first."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "accept_edits"})
    task = await _start_prompt(agent, sid, tool("terminal", command="sleep 30"))
    await eventually(lambda: any(u.get("status") == "in_progress" for u in agent.updates(sid)))
    start = time.monotonic()
    await agent.notify("session/cancel", {"sessionId": sid})
    assert (await task) == {"stopReason": "cancelled"}
    assert time.monotonic() - start < scaled(1.0)
    (events,) = calls(agent.updates(sid)).values()
    assert final(events)["status"] == "failed"
    assert (await agent.prompt(sid, "next"))["stopReason"] == "end_turn"


async def test_cancel_with_a_permission_pending(spawn: Any, home: Home) -> None:
    """#32: cancel while asking → cancelled, request withdrawn, late answer ignored."""
    client = RecordingClient()
    client.permission_delay = 1.0
    client.permission_answers = ["allow_once"]
    agent = await spawn(client=client, initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    task = await _start_prompt(agent, sid, tool("write_file", path="p.txt", content="p"))
    (asked,) = await eventually(lambda: agent.received("session/request_permission"))
    await agent.notify("session/cancel", {"sessionId": sid})
    assert (await task) == {"stopReason": "cancelled"}
    assert agent.received("$/cancel_request")
    # The client answers after its delay; the agent reads that late answer before the next prompt.
    await eventually(lambda: _answered(agent, asked["id"]), what="the late permission answer")
    assert (await agent.prompt(sid, "next"))["stopReason"] == "end_turn"
    assert not (home.workspace / "p.txt").exists()


async def test_cancel_idle_unknown_and_cancel_request(spawn: Any, home: Home) -> None:
    """#33: idle/unknown cancel and unknown $/cancel_request are silent; a prompt id cancels it."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.settle()
    before = len([f for f in agent.frames if f[0] == "in"])
    await agent.notify("session/cancel", {"sessionId": sid})
    await agent.notify("session/cancel", {"sessionId": "nope"})
    await agent.notify("$/cancel_request", {"requestId": 9999})
    await agent.notify("$/cancel_request", {})
    await agent.settle(0.3)
    assert len([f for f in agent.frames if f[0] == "in"]) == before
    task = await _start_prompt(agent, sid, "[[delay 200]] [[tokens 50]]")
    await eventually(lambda: _prompts_sent(agent) == 1)
    prompt_id = next(m["id"] for d, m in agent.frames if d == "out" and m.get("method") == "session/prompt")
    await agent.notify("$/cancel_request", {"requestId": prompt_id})
    assert (await task) == {"stopReason": "cancelled"}


async def test_queued_prompts_run_in_order(spawn: Any, home: Home) -> None:
    """#22: a second prompt during a slow turn runs after it; its updates follow turn 1's response."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    first = await _start_prompt(agent, sid, "[[delay 20]] [[tokens 10]]")
    await _streaming(agent, sid, first)
    second = await _start_prompt(agent, sid, "second one")
    assert (await first) == {"stopReason": "end_turn"}
    assert (await second) == {"stopReason": "end_turn"}
    assert agent.text(sid) == "t0 t1 t2 t3 t4 t5 t6 t7 t8 t9You said: second one"


async def test_cancel_discards_queued_prompts(spawn: Any, home: Home) -> None:
    """docs/reference/acp.md#one-turn-at-a-time: session/cancel ends the running turn and every queued prompt
    with cancelled."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    first = await _start_prompt(agent, sid, "[[delay 200]] [[tokens 20]]")
    await _streaming(agent, sid, first)
    second = await _start_prompt(agent, sid, "queued")
    # The agent reads frames in order: once the second prompt is on the wire, the cancel follows it.
    await eventually(lambda: _prompts_sent(agent) == 2)
    await agent.notify("session/cancel", {"sessionId": sid})
    assert (await first) == {"stopReason": "cancelled"}
    assert (await second) == {"stopReason": "cancelled"}
    assert "queued" not in agent.text(sid)


async def test_close_during_a_slow_turn(spawn: Any, home: Home) -> None:
    """#17: close answers the prompt cancelled first; later prompts get -32002; load works."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(sid, "first")
    task = await _start_prompt(agent, sid, "[[delay 200]] [[tokens 30]]")
    await _streaming(agent, sid, task)
    assert (await agent.request("session/close", {"sessionId": sid})) == {}
    assert (await task) == {"stopReason": "cancelled"}
    order = [m.get("id") for d, m in agent.frames if d == "in" and "method" not in m]
    prompt_id = [m["id"] for d, m in agent.frames if d == "out" and m.get("method") == "session/prompt"][-1]
    close_id = [m["id"] for d, m in agent.frames if d == "out" and m.get("method") == "session/close"][-1]
    assert order.index(prompt_id) < order.index(close_id)
    error = await agent.error("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    assert error["code"] == -32002
    assert (await agent.error("session/close", {"sessionId": sid}))["code"] == -32002
    loaded = await agent.request(
        "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
    )
    assert loaded["modes"]["currentModeId"] == "default"


async def test_bad_prompt_then_close_does_not_hang(spawn: Any, home: Home) -> None:
    """A prompt that fails validation still releases its place, so close answers promptly."""
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    bad = asyncio.create_task(agent.error("session/prompt", {"sessionId": sid, "prompt": "not a list"}))
    closing = asyncio.create_task(agent.request("session/close", {"sessionId": sid}))
    assert (await asyncio.wait_for(bad, 5))["code"] == -32602
    assert (await asyncio.wait_for(closing, 5)) == {}
