"""session/load replays a reply that was cut off with a note saying so (over real stdio)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from hermes_core.history import CUT_OFF_NOTES
from tests.acp.conftest import Home


async def _wait_for(predicate: Any, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        await asyncio.sleep(0.01)


async def test_load_marks_a_cancelled_reply_as_cut_off(spawn: Any, home: Home) -> None:
    agent = await spawn(initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    task = asyncio.create_task(agent.prompt(sid, "[[delay 20]] [[tokens 500]]"))
    await _wait_for(lambda: any(u.get("sessionUpdate") == "agent_message_chunk" for u in agent.updates(sid)))
    await agent.notify("session/cancel", {"sessionId": sid})
    assert (await task) == {"stopReason": "cancelled"}
    assert (await agent.prompt(sid, "again"))["stopReason"] == "end_turn"
    await agent.request("session/close", {"sessionId": sid})

    second = await spawn(initialize={})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    chunks = [
        (u["messageId"], u["content"]["text"])
        for u in second.updates(sid)
        if u.get("sessionUpdate") == "agent_message_chunk"
    ]
    note = f"\n\n{CUT_OFF_NOTES['interrupted']}"
    cut = [text for _, text in chunks if text == note]
    assert len(cut) == 1, chunks
    # The note belongs to the cut-off reply's message, right after its text; the whole reply has none.
    (index,) = [i for i, (_, text) in enumerate(chunks) if text == note]
    assert chunks[index - 1][0] == chunks[index][0] and chunks[index - 1][1].startswith("t0")
    assert chunks[-1][1] == "You said: again"
