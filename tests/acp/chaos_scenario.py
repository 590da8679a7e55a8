"""The ACP kill -9 scenario on any storage, driven by the ACP SDK (see tests/chaos.py).

A client prompts through the ``openai`` provider from a fake upstream that stalls after three
deltas; ``hermes acp`` is killed with SIGKILL once those deltas are stored; a new agent starts on
the same storage and the client calls ``session/load``. The replay (from the stored rows) says
the user's prompt once and then the cut-off reply once: the text that was streamed and the note
that the turn was interrupted, stored as the reply row when the session was opened again. The
log's explicit terminal event agrees, and the next prompt works.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from hermes_core import CUT_OFF_NOTES, NO_REPLY_NOTES, TextDelta, TurnCompleted, TurnStarted
from tests import chaos
from tests.acp.conftest import Home
from tests.timing import eventually

STREAMED = "".join(chaos.DELTAS)


async def _stored_text(reader: Any, session_id: str) -> int:
    items = await chaos.whole_log(reader, session_id)
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    return max((i.seq for i in items if isinstance(i, TextDelta)), default=0) if text == STREAMED else 0


def _agent_chunks(agent: Any, session_id: str) -> list[tuple[str, str]]:
    return [
        (u["messageId"], u["content"]["text"])
        for u in agent.updates(session_id)
        if u.get("sessionUpdate") == "agent_message_chunk"
    ]


async def run(spawn: Callable[..., Any], home: Home, storage: dict[str, Any], storage_toml: str = "") -> None:
    """Play the scenario with the ``spawn`` fixture of tests/acp/conftest.py."""
    async with chaos.stalling_upstream() as upstream:
        home.write_config(chaos.config_text(upstream.up.url, storage_toml))
        reader = chaos.reader_kernel(storage)
        async with reader.running():
            first = await spawn(initialize={})
            sid = (await first.new(home.workspace))["sessionId"]
            cut = asyncio.create_task(first.prompt(sid, chaos.FIRST))
            await eventually(lambda: first.text(sid) == STREAMED, timeout=30, what="the three deltas")
            await eventually(lambda: _stored_text(reader, sid), timeout=20, what="the deltas to be stored")
            assert upstream.stalled.is_set()
            chaos.kill9_async_pid(first.process.pid)
            await first.process.wait()
            cut.cancel()
            with contextlib.suppress(BaseException):
                await cut

            second = await spawn(initialize={})
            await second.request(
                "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
            )
            updates = second.updates(sid)
            said = [u["content"]["text"] for u in updates if u.get("sessionUpdate") == "user_message_chunk"]
            assert said == [chaos.FIRST]
            note = CUT_OFF_NOTES["interrupted"]
            # Once each: no duplicate, nothing missing; the note right after the text.
            chunks = _agent_chunks(second, sid)
            assert [t for _, t in chunks] == [STREAMED, f"\n\n{note}"] and chunks[0][0] == chunks[1][0]

            # The rows and the log agree: the log's terminal event carries the same text.
            items = await chaos.stored_until_terminal(reader, sid)
            (terminal,) = [i for i in items if isinstance(i, TurnCompleted)]
            assert terminal.outcome.status == "interrupted"
            assert terminal.outcome.reason == "interrupted_by_system" and terminal.text == STREAMED
            assert chunks[0][0] == f"row-{terminal.assistant_row_id}"
            # The end follows the last stored event: no number is skipped.
            assert chaos.gaps(items) == []

            # The next prompt works; a later load replays both turns, each once.
            assert (await second.prompt(sid, chaos.SECOND))["stopReason"] == "end_turn"
            assert second.text(sid).endswith(chaos.ANSWER)
            await second.request("session/close", {"sessionId": sid})
            third = await spawn(initialize={})
            await third.request(
                "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
            )
            texts = [t for _, t in _agent_chunks(third, sid)]
            assert texts == [STREAMED, f"\n\n{note}", chaos.ANSWER], texts
            assert upstream.asked() == [chaos.FIRST, chaos.SECOND]


async def _turn_stored(reader: Any, session_id: str) -> bool:
    return any(isinstance(i, TurnStarted) for i in await chaos.whole_log(reader, session_id))


async def run_before_first_token(
    spawn: Callable[..., Any], home: Home, storage: dict[str, Any], storage_toml: str = ""
) -> None:
    """The same, killed before the upstream sent a single token: no reply row can be stored, and
    ``session/load`` still ends the turn, with the note that it was interrupted before a reply."""
    async with chaos.stalling_upstream(deltas=()) as upstream:
        home.write_config(chaos.config_text(upstream.up.url, storage_toml))
        reader = chaos.reader_kernel(storage)
        async with reader.running():
            first = await spawn(initialize={})
            sid = (await first.new(home.workspace))["sessionId"]
            cut = asyncio.create_task(first.prompt(sid, chaos.FIRST))
            await eventually(upstream.stalled.is_set, timeout=30, what="the upstream to stall")
            await eventually(lambda: _turn_stored(reader, sid), timeout=20, what="the turn's start stored")
            chaos.kill9_async_pid(first.process.pid)
            await first.process.wait()
            cut.cancel()
            with contextlib.suppress(BaseException):
                await cut

            second = await spawn(initialize={})
            await second.request(
                "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
            )
            updates = second.updates(sid)
            said = [u["content"]["text"] for u in updates if u.get("sessionUpdate") == "user_message_chunk"]
            assert said == [chaos.FIRST]
            note = NO_REPLY_NOTES["interrupted"]
            assert [t for _, t in _agent_chunks(second, sid)] == [note]

            items = await chaos.stored_until_terminal(reader, sid)
            (terminal,) = [i for i in items if isinstance(i, TurnCompleted)]
            assert (terminal.outcome.status, terminal.outcome.reason) == (
                "interrupted",
                "interrupted_by_system",
            )
            assert terminal.text == "" and terminal.assistant_row_id is None

            # The next prompt works; a later load shows the note once, then the answer.
            assert (await second.prompt(sid, chaos.SECOND))["stopReason"] == "end_turn"
            assert second.text(sid).endswith(chaos.ANSWER)
            await second.request("session/close", {"sessionId": sid})
            third = await spawn(initialize={})
            await third.request(
                "session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []}
            )
            assert [t for _, t in _agent_chunks(third, sid)] == [note, chaos.ANSWER]
            assert upstream.asked() == [chaos.FIRST, chaos.SECOND]
