"""A scenario's faults on ``hermes acp`` (docs/reference/scenarios.md#faults-on-stdio), driven by
the official ACP SDK over real stdio.

Frame 0 is the first frame after the ``initialize`` response. In the flow below the agent writes:
0 the ``session/new`` response, 1 ``available_commands_update``, 2-5 the chunks ``a`` ``b`` ``c``
``d``, then the title update and the prompt response. A ``drop`` or ``restart`` cuts the output
and ends the process with exit code 75 once the turn ended; the host starts ``hermes acp`` again
on the same ``HERMES_HOME`` and ``session/load`` replays the whole conversation, once.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.scenarios import RESPAWN_EXIT_CODE
from tests.acp.client import RecordingClient
from tests.acp.conftest import Home
from tests.timing import scaled

STEPS = """
[[turns]]
user = "go"
  [[turns.steps]]
  chunks = [
    { text = "a", delay_ms = 40 }, { text = "b", delay_ms = 40 },
    { text = "c", delay_ms = 40 }, { text = "d", delay_ms = 40 },
  ]

[[turns]]
user = "again"
  [[turns.steps]]
  chunks = [{ text = "e" }]
"""


def _env(home: Home, tmp_path: Path, fault: str) -> dict[str, str]:
    path = tmp_path / "faulty.toml"
    path.write_text(STEPS + "[[faults]]\n" + fault, encoding="utf-8")
    return home.env(HERMES_MODEL=f"mock:scenario:{path}")


def _chunks(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> list[str]:
    return [u["content"]["text"] for u in updates if u.get("sessionUpdate") == kind]


class TimedClient(RecordingClient):
    """Notes when each ``session/update`` arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[tuple[float, dict[str, Any]]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.arrivals.append((time.monotonic(), update.model_dump(mode="json", by_alias=True)))


@pytest.mark.parametrize("action", ["drop", "restart"])
async def test_a_cut_ends_the_agent_with_75_and_session_load_brings_the_turn_back_once(
    spawn: Any, home: Home, tmp_path: Path, action: str
) -> None:
    from acp import RequestError

    from hermes_acp.faults import RESPAWN_EXIT_CODE as ACP_RESPAWN_EXIT_CODE

    assert ACP_RESPAWN_EXIT_CODE == RESPAWN_EXIT_CODE
    env = _env(home, tmp_path, f'transport = "acp"\naction = "{action}"\nafter_frames = 3\n')
    first = await spawn(env=env, initialize={})
    sid = (await first.new(home.workspace))["sessionId"]
    prompt = asyncio.create_task(first.prompt(sid, "go"))
    code = await asyncio.wait_for(first.process.wait(), scaled(30))
    with pytest.raises((ConnectionError, RequestError)):
        await prompt  # its response was cut: the SDK fails the call when stdout ends
    assert code == RESPAWN_EXIT_CODE
    received = [m for d, m in first.frames if d == "in"]
    assert len(received) == 1 + 3  # the initialize response, then frames 0-2; the rest was cut
    assert _chunks(first.updates(sid)) == ["a"]
    assert f"injecting fault {action} before frame 4" in first.stderr()

    # The host starts the agent again on the same HERMES_HOME and loads the session.
    second = await spawn(env=env, initialize={})
    await second.request("session/load", {"sessionId": sid, "cwd": str(home.workspace), "mcpServers": []})
    replay = second.updates(sid)
    assert _chunks(replay, "user_message_chunk") == ["go"]
    assert "".join(_chunks(replay)) == "abcd"  # the whole reply, nothing lost, nothing twice
    assert len(_chunks(replay)) == 1
    # The rule fired once; the count outlives the process, so the respawned one is not cut.
    assert "injecting fault" not in second.stderr()
    counts = json.loads((home.path / "scenario-faults.json").read_text())
    assert counts == {str(tmp_path / "faulty.toml"): [1]}
    assert (await second.prompt(sid, "again"))["stopReason"] == "end_turn"  # the session goes on
    assert "".join(_chunks(second.updates(sid))) == "abcde"


async def test_duplicate_sends_one_update_twice(spawn: Any, home: Home, tmp_path: Path) -> None:
    fault = 'transport = "acp"\naction = "duplicate"\nafter_frames = 3\n'
    agent = await spawn(env=_env(home, tmp_path, fault), initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.prompt(sid, "go"))["stopReason"] == "end_turn"
    received = [m for d, m in agent.frames if d == "in"]
    assert received[4] == received[5]  # frame 3 (chunk "b") came twice, back to back
    assert _chunks(agent.updates(sid)) == ["a", "b", "b", "c", "d"]
    assert "injecting fault duplicate before frame 4" in agent.stderr()


async def test_a_duplicated_frame_is_byte_identical(raw: Any, home: Home, tmp_path: Path) -> None:
    agent = await raw(env=_env(home, tmp_path, 'transport = "any"\naction = "duplicate"\nafter_frames = 2\n'))
    assert (await agent.request(0, "initialize", {"protocolVersion": 1}))["result"]
    created = await agent.request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
    sid = created["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    assert (await agent.request(2, "session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
    # raw[0] is the initialize response; frame 2 (chunk "a") is raw[3], its copy raw[4].
    assert agent.raw[3] == agent.raw[4]
    assert json.loads(agent.raw[3])["params"]["update"]["content"]["text"] == "a"
    assert len(agent.raw) == 1 + 8 + 1


async def test_delay_holds_one_frame_back(spawn: Any, home: Home, tmp_path: Path) -> None:
    client = TimedClient()
    fault = 'transport = "acp"\naction = "delay"\ndelay_ms = 700\nafter_frames = 4\n'
    agent = await spawn(client=client, env=_env(home, tmp_path, fault), initialize={})
    sid = (await agent.new(home.workspace))["sessionId"]
    sent = time.monotonic()
    assert (await agent.prompt(sid, "go"))["stopReason"] == "end_turn"
    chunks = [
        (at, u["content"]["text"]) for at, u in client.arrivals if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert [text for _, text in chunks] == ["a", "b", "c", "d"]  # held back, not lost or repeated
    assert chunks[2][0] - sent >= 0.7  # frame 4 (chunk "c") was held back 700 ms …
    assert chunks[2][0] - chunks[1][0] >= 0.5  # … after "b" went out (the chunks are 40 ms apart)
    assert "injecting fault delay before frame 5" in agent.stderr()
