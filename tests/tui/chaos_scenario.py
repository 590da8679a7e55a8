"""The TUI gateway's kill -9 scenario, over stdio or WebSocket, on any storage (see tests/chaos.py).

A client streams a turn through the ``openai`` provider from a fake upstream that stalls after
three deltas; the gateway is killed with SIGKILL as soon as the client has shown those deltas
(not waiting for anything else: the gateway sends a numbered frame only once the event log has
stored it, so whatever the client saw survives); a new gateway starts on the same storage; the
client calls ``session.events.since`` with its cursor. It gets every logged event after the
cursor exactly once, numbered on from it: 0 gaps, 0 duplicates, and the cut-off turn's
``message.complete {status: "interrupted", reason: "interrupted_by_system"}`` with the text it
had streamed, numbered right after the last stored event; the next turn works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from hermes_core import TurnCompleted
from tests import chaos
from tests.timing import eventually
from tests.tui.client import TuiProcess, WsClient, WsServer, write_config

TOKEN = "chaos-token-0123456789abcdef"


class Side(Protocol):
    """One gateway process and one client connected to it."""

    proc: Any

    async def ready(self) -> dict[str, Any]: ...
    async def call(self, method: str, **params: Any) -> Any: ...
    def events(self, session_id: str) -> list[dict[str, Any]]: ...
    async def close(self) -> None: ...


class StdioSide:
    """``hermes tui`` over stdio."""

    def __init__(self, home: Path) -> None:
        self.tui = TuiProcess(home, cwd=home)
        self.proc = self.tui.proc

    async def ready(self) -> dict[str, Any]:
        frame = await asyncio.to_thread(self.tui.wait_event, "", "gateway.ready", 30)
        payload: dict[str, Any] = frame["payload"]
        return payload

    async def call(self, method: str, **params: Any) -> Any:
        return await asyncio.to_thread(self.tui.call, method, params, 30)

    def events(self, session_id: str) -> list[dict[str, Any]]:
        return self.tui.events(session_id)

    async def close(self) -> None:
        await asyncio.to_thread(self.tui.close)


class WsSide:
    """``hermes tui --ws`` and one WebSocket client."""

    def __init__(self, home: Path) -> None:
        self.server = WsServer(home, TOKEN)
        self.proc = self.server.proc
        self.client: WsClient | None = None

    async def ready(self) -> dict[str, Any]:
        self.client = await WsClient.connect(self.server.url, headers={"Authorization": f"Bearer {TOKEN}"})
        frames = await self.client.wait(lambda: self.client.frames if self.client else None, timeout=30)
        payload: dict[str, Any] = frames[0]["params"]["payload"]
        return payload

    async def call(self, method: str, **params: Any) -> Any:
        assert self.client is not None
        return await self.client.call(method, params)

    def events(self, session_id: str) -> list[dict[str, Any]]:
        assert self.client is not None
        return self.client.events(session_id)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        await asyncio.to_thread(self.server.stop)


def _text(frames: list[dict[str, Any]]) -> str:
    return "".join(e["payload"]["text"] for e in frames if e["type"] == "message.delta")


async def run(
    home: Path, make: Callable[[Path], Side], storage: dict[str, Any], storage_toml: str = ""
) -> None:
    """Play the scenario; ``make`` starts a gateway on ``home`` and connects a client."""
    async with chaos.stalling_upstream() as upstream:
        write_config(home, chaos.config_text(upstream.up.url, storage_toml))
        first = make(home)
        sides = [first]
        reader = chaos.reader_kernel(storage)
        try:
            async with reader.running():
                await _play(home, make, sides, upstream, reader)
        finally:
            for side in sides:
                await side.close()


async def _play(
    home: Path,
    make: Callable[[Path], Side],
    sides: list[Side],
    upstream: chaos.StallingUpstream,
    reader: Any,
) -> None:
    first = sides[0]
    epoch = (await first.ready())["replay_epoch"]
    sid = (await first.call("session.create"))["session_id"]
    assert (await first.call("prompt.submit", session_id=sid, text=chaos.FIRST))["status"] == "streaming"
    streamed = "".join(chaos.DELTAS)
    await eventually(lambda: _text(first.events(sid)) == streamed, timeout=30, what="the three deltas")
    had = [e for e in first.events(sid) if "seq" in e]
    cursor = had[-1]["seq"]
    assert upstream.stalled.is_set()
    chaos.kill9(first.proc)
    # Everything the client was shown is stored: its cursor is never above the log's end.
    stored = await chaos.stored_end(reader, sid)
    assert cursor <= stored, f"the client was shown seq {cursor}, the log stored up to {stored}"

    second = make(home)
    sides.append(second)
    ready = await second.ready()
    # The storage kept its records: the epoch is the same, the cursor still means something.
    assert ready["replay_epoch"] == epoch
    replay = await second.call("session.events.since", session_id=sid, last_seen=cursor)
    frames = replay["events"]
    seqs = [e["seq"] for e in frames]
    # 0 duplicates: every number once, above the cursor (a frame carries the number of the
    # newest core event it shows, so events that show as no frame leave numbers out).
    assert seqs == sorted(set(seqs)) and seqs and seqs[0] > cursor, seqs
    assert not {e["seq"] for e in had} & set(seqs)
    assert [e for e in frames if e["type"] == "session.gap"] == [], frames
    assert replay["truncated"] is False
    completes = [e for e in frames if e["type"] == "message.complete"]
    # The cut-off turn ends right after the last stored event (no number the dead process
    # held back is skipped).
    assert len(completes) == 1 and completes[0]["seq"] == stored + 1 == seqs[-1], (stored, frames)
    cut = completes[0]["payload"]
    assert cut["status"] == "interrupted" and cut["reason"] == "interrupted_by_system"
    assert cut["text"] == streamed
    assert "ended before the turn completed" in cut["message"]
    assert replay["latest_seq"] == seqs[-1]
    # A client that had less (down to nothing) gets no gap either.
    whole = await second.call("session.events.since", session_id=sid, last_seen=0)
    numbers = [e["seq"] for e in whole["events"]]
    assert numbers == sorted(set(numbers)) and numbers[-1] == seqs[-1], numbers
    assert [e for e in whole["events"] if e["type"] == "session.gap"] == [], whole["events"]
    assert whole["truncated"] is False

    # The log itself says the same: no gap, the terminal event at the frame's number.
    items = await chaos.stored_until_terminal(reader, sid)
    assert chaos.gaps(items) == []
    (terminal,) = [i for i in items if isinstance(i, TurnCompleted)]
    assert terminal.seq == completes[0]["seq"] and terminal.outcome.status == "interrupted"

    # The next turn works, live after the replay, numbered above it.
    assert (await second.call("prompt.submit", session_id=sid, text=chaos.SECOND))["status"] == "streaming"

    def done() -> list[dict[str, Any]]:
        return [e for e in second.events(sid) if e["type"] == "message.complete"]

    (after,) = await eventually(done, timeout=30, what="the next turn")
    assert after["payload"]["status"] == "complete" and after["payload"]["text"] == chaos.ANSWER
    live = [e["seq"] for e in second.events(sid) if "seq" in e]
    assert live == sorted(set(live)) and live[0] > replay["latest_seq"], live
    assert upstream.asked() == [chaos.FIRST, chaos.SECOND]


def stdio(home: Path) -> Side:
    """Start a gateway over stdio."""
    return StdioSide(home)


def websocket(home: Path) -> Side:
    """Start a gateway over WebSocket."""
    return WsSide(home)
