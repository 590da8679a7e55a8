"""A numbered frame goes out only once the event log has stored its event
(docs/reference/tui-gateway.md#sequence-numbers-and-replay): the gateway's session stream on a
real SQLite file whose log writes are held back (a slow disk), so a client's cursor can never be
above what survives a ``kill -9``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hermes_core import Kernel
from hermes_tui_gateway.stream import SessionStream
from tests.held_log import hold_log_writes, sqlite_kernel
from tests.timing import eventually, scaled


class Sink:
    """A connection: every frame, with what the log had stored when it was sent."""

    def __init__(self, kernel: Kernel, session_id: str) -> None:
        self.kernel = kernel
        self.session_id = session_id
        self.frames: list[tuple[dict[str, Any], int | None]] = []

    def send_bytes(self, data: bytes) -> None:
        params = json.loads(data)["params"]
        self.frames.append((params, self.kernel.events.stored(self.session_id)))

    def numbered(self) -> list[dict[str, Any]]:
        return [p for p, _ in self.frames if "seq" in p]


async def test_frames_wait_for_the_batch_that_stores_them(tmp_path: Path) -> None:
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        disk, waiting = hold_log_writes(kernel.storage, open_now=True)
        session = await kernel.open_session("held", source="tui", owner="test", cwd=tmp_path)
        await (await session.submit("first, stored as it goes", owner="test")).outcome
        stream = SessionStream(session, lambda: {}, 512, 1 << 22)  # type: ignore[arg-type, return-value]
        sink = Sink(kernel, session.id)
        stream.bind(sink)
        try:
            disk.clear()
            turn = await session.submit("[[tokens 40]]", owner="test")
            assert (await turn.outcome).status == "complete"

            def complete() -> int:
                done = [seq for seq, params, _ in stream.ring if params["type"] == "message.complete"]
                return done[-1] if done else 0

            await eventually(complete, what="the stream to number the turn's end")
            head = stream.seq
            await eventually(lambda: waiting, what="a log write to wait for the disk")
            # The turn ran to its end, its frames are numbered: none went out before being stored.
            assert sink.numbered() == [], sink.frames
            assert stream.shown_seq < head
            # A notice sent meanwhile does not overtake the numbered frames queued before it.
            stream.emit("status.update", {"kind": "note", "text": "after the turn"})
            assert [p["type"] for p, _ in sink.frames] == []

            disk.set()
            await eventually(lambda: stream.shown_seq == head, what="the frames once stored")
            numbered = sink.numbered()
            seqs = [p["seq"] for p in numbered]
            assert seqs == sorted(set(seqs)) and seqs[-1] == head
            assert "message.complete" in [p["type"] for p in numbered]
            # Every frame was sent once the log held its event.
            for params, stored in sink.frames:
                if "seq" in params:
                    assert stored is not None and params["seq"] <= stored, (params, stored)
            assert sink.frames[-1][0]["type"] == "status.update"
            # Once nothing waits, a frame of an event already stored goes out at once.
            stream.emit("status.update", {"kind": "note", "text": "direct"})
            assert sink.frames[-1][0]["payload"]["text"] == "direct"
        finally:
            disk.set()
            await session.close()
            await stream.aclose()


async def test_a_replay_after_a_kill_9_waits_for_the_cut_off_turns_end(tmp_path: Path) -> None:
    """A stream started on a session a ``kill -9`` cut off begins above the end the restart
    appended (its numbers come from the log only): ``session.events.since`` gives that end,
    once stored, and never before."""
    from types import SimpleNamespace

    from hermes_tui_gateway.replay import from_log
    from tests.event_log_crash import run_child_until_killed

    db = tmp_path / "hermes.sqlite3"
    printed, _durable = await asyncio.to_thread(run_child_until_killed, "sqlite", str(db), "cut", tmp_path)
    kernel = Kernel.create(
        entry_points=["mock", "sqlite"],
        strict=True,
        settings={
            "model": "mock:echo",
            "storage": {"backend": "sqlite", "path": str(db)},
            "titles": {"refine": False},
        },
    )
    async with kernel.running():
        disk, waiting = hold_log_writes(kernel.storage, open_now=False)
        session = await kernel.open_session("cut", source="tui", owner="test")
        stream = SessionStream(session, lambda: {}, 512, 1 << 22)  # type: ignore[arg-type, return-value]
        try:
            head = kernel.events.head("cut")
            assert head is not None and stream.shown_seq == head
            await eventually(lambda: waiting, what="the end's write to wait for the disk")
            seen = max(printed)  # the client's cursor: the newest event it was shown
            replay = asyncio.create_task(
                from_log(SimpleNamespace(session=session, stream=stream), seen, head)
            )  # type: ignore[arg-type]
            await asyncio.sleep(0.01)
            assert not replay.done()  # nothing of the end goes out before it is stored
            disk.set()
            frames, gaps, reached = await asyncio.wait_for(replay, scaled(10))
            assert reached == head
            assert gaps == []
            seqs = [f["seq"] for f in frames]
            assert seqs == sorted(set(seqs)) and seqs[-1] == head and seqs[0] > seen
            assert frames[-1]["type"] == "message.complete", frames[-1]
        finally:
            disk.set()
            await session.close()
            await stream.aclose()


async def test_frames_the_log_never_stored_go_out_without_a_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session closes while its log's writes are held, and the close times out: the frames
    waiting for the log go out as notices (no ``seq``), never numbered above what was stored."""
    from hermes_core.event_log import owner

    monkeypatch.setattr(owner, "CLOSE_TIMEOUT_S", 0.2)
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        storage: Any = kernel.storage
        disk, waiting = hold_log_writes(storage, open_now=True)
        session = await kernel.open_session("stops", source="tui", owner="test", cwd=tmp_path)
        await (await session.submit("first, stored as it goes", owner="test")).outcome
        await kernel.events.flush()
        stream = SessionStream(session, lambda: {}, 512, 1 << 22)  # type: ignore[arg-type, return-value]
        sink = Sink(kernel, session.id)
        stream.bind(sink)
        stored = kernel.events.stored(session.id)
        assert stored is not None
        try:
            disk.clear()
            turn = await session.submit("[[tokens 20]]", owner="test")
            assert (await turn.outcome).status == "complete"
            await eventually(lambda: waiting, what="a log write to wait for the disk")
            await eventually(
                lambda: any(p["type"] == "message.complete" for _, p, _ in stream.ring),
                what="the stream to number the turn's end",
            )
            assert sink.frames == []
            await asyncio.wait_for(session.close(), scaled(5))
            await asyncio.wait_for(stream.aclose(), scaled(10))
            last = await storage.last_event_chunk(session.id)
            on_disk = last.last_seq if last is not None else 0
            assert on_disk == stored  # the held write never landed
            numbered = [p["seq"] for p in sink.numbered()]
            assert numbered == [] or max(numbered) <= stored, (numbered, stored)
            assert stream.shown_seq <= stored
            # The turn's text still reached the client, as notices.
            bare = [p for p, _ in sink.frames if "seq" not in p]
            assert "message.complete" in [p["type"] for p in bare], sink.frames
        finally:
            disk.set()


async def test_a_replay_stops_at_the_stored_end_of_a_log_that_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream started while its session's log had yet to store what it numbered (as after a
    restart) replays up to that number once stored; when the log stops first (the close times
    out), the replay ends at the stored end and says so, so ``latest_seq`` claims no more."""
    from types import SimpleNamespace

    from hermes_core.event_log import owner
    from hermes_tui_gateway.replay import from_log

    monkeypatch.setattr(owner, "CLOSE_TIMEOUT_S", 0.2)
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        disk, waiting = hold_log_writes(kernel.storage, open_now=True)
        session = await kernel.open_session("capped", source="tui", owner="test", cwd=tmp_path)
        await (await session.submit("first, stored as it goes", owner="test")).outcome
        await kernel.events.flush()
        stored = kernel.events.stored(session.id)
        assert stored is not None
        try:
            disk.clear()
            assert (await (await session.submit("[[tokens 20]]", owner="test")).outcome).status == "complete"
            await eventually(lambda: waiting, what="a log write to wait for the disk")
            stream = SessionStream(session, lambda: {}, 512, 1 << 22)  # type: ignore[arg-type, return-value]
            head = kernel.events.head(session.id)
            assert head is not None and stream.shown_seq == head > stored
            replay = asyncio.create_task(
                from_log(SimpleNamespace(session=session, stream=stream), stored, head)  # type: ignore[arg-type]
            )
            await asyncio.wait_for(session.close(), scaled(5))
            frames, gaps, reached = await asyncio.wait_for(replay, scaled(5))
            assert (frames, gaps, reached) == ([], [], stored)
            await stream.aclose()
        finally:
            disk.set()


async def test_an_open_question_still_waiting_for_the_log_is_listed_without_its_seq(tmp_path: Path) -> None:
    """``open_requests`` (in a snapshot or a replay's result) lists a question's ``*.request``
    frame; while that frame waits for the log, its number is no cursor yet and is left out."""
    from hermes_core import ALL_KINDS
    from hermes_tui_gateway.gateway import Gateway, Live
    from hermes_tui_gateway.settings import TuiSettings

    kernel = Kernel.create(
        entry_points=["mock", "sqlite", "tools"],
        strict=True,
        settings={
            "model": "mock:echo",
            "storage": {"backend": "sqlite", "path": str(tmp_path / "hermes.sqlite3")},
            "titles": {"refine": False},
        },
    )
    async with kernel.running():
        disk, waiting = hold_log_writes(kernel.storage, open_now=True)
        session = await kernel.open_session(
            "asks", source="tui", owner="test", cwd=tmp_path, profile="default"
        )
        await (await session.submit("first, stored as it goes", owner="test")).outcome
        await kernel.events.flush()
        stream = SessionStream(session, lambda: {}, 512, 1 << 22)  # type: ignore[arg-type, return-value]
        live = Live(session, stream, created=0.0)
        gateway = Gateway(kernel, TuiSettings())
        try:
            disk.clear()
            ask = '[[tool write_file {"path": "asked.txt", "content": "z"}]]'
            await session.submit(ask, owner="test", answerable=ALL_KINDS)
            await eventually(lambda: session.open_questions(), what="the approval to be asked")
            await eventually(
                lambda: any(p["type"] == "approval.request" for _, p, _ in stream.ring),
                what="the stream to number the request",
            )
            await eventually(lambda: waiting, what="a log write to wait for the disk")
            [listed] = gateway.open_requests(live)
            assert listed["type"] == "approval.request" and "seq" not in listed, listed
            assert stream.shown_seq < max(seq for seq, _, _ in stream.ring)
            disk.set()
            numbered = max(seq for seq, p, _ in stream.ring if p["type"] == "approval.request")
            await eventually(lambda: stream.shown_seq >= numbered, what="the request once stored")
            [listed] = gateway.open_requests(live)
            assert listed.get("seq") == numbered
            assert kernel.answer(session.open_questions()[0].request_id, "deny") == "ok"
        finally:
            disk.set()
            await session.close()
            await stream.aclose()
            gateway.pool.shutdown(wait=False)
