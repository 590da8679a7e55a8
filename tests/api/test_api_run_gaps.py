"""A resumed run stream never skips seqs silently: whenever the answer starts above cursor + 1,
a ``stream.gap`` names the missing seqs first (docs/reference/api-server.md#run-events) — here on
one instance whose journal is gone after a restart (only the stored terminal event is left), and
in the journal itself for every way it can skip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_api_server.journal import Journal
from tests.api.api_helpers import call, parse_sse, start_server
from tests.api.conftest import BASE_CONFIG
from tests.api.test_api_runs import start_run, wait_status


def frames_of(text: str) -> list[dict[str, Any]]:
    return [f for f in parse_sse(text) if "data" in f]


def same_events(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    """The same frames, timestamps included (the event log keeps them to the millisecond, as
    the core stamps them)."""
    return [(f.get("id"), f["data"]) for f in got] == [(f.get("id"), f["data"]) for f in want]


def check_no_silent_jump(frames: list[dict[str, Any]], cursor: int) -> None:
    """Every event follows the cursor or a stream.gap that ends right before it."""
    for frame in frames:
        data = frame["data"]
        if data["event"] == "stream.gap":
            assert "id" not in frame and data["from_seq"] == cursor + 1, (cursor, data)
            cursor = data["to_seq"]
            continue
        assert int(frame["id"]) == cursor + 1, (cursor, frame)
        cursor = int(frame["id"])


async def test_after_a_restart_a_resumed_stream_continues_from_the_event_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    srv = start_server(home, config=BASE_CONFIG)
    try:
        run_id = (await start_run(srv, {"input": "[[tokens 12]] [[delay 5]] go"}))["run_id"]
        done = await wait_status(srv, run_id, "completed")
        live = frames_of((await call(srv, "GET", f"/v1/runs/{run_id}/events")).text)
    finally:
        srv.stop()
    end = int(done["last_seq"])
    assert end >= 5, done
    again = start_server(home, config=BASE_CONFIG)
    try:
        for cursor in (0, 2, end - 2):
            reply = await call(
                again, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(cursor)}
            )
            assert reply.status == 200, reply.text
            frames = frames_of(reply.text)
            # The same events as live, read back from the session's event log: no gap.
            assert same_events(frames, live[cursor:]), reply.text
            assert int(frames[-1]["id"]) == end and reply.text.rstrip().endswith(": stream closed")
            check_no_silent_jump(frames, cursor)
        reply = await call(again, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(end)})
        assert reply.status == 204
    finally:
        again.stop()


async def test_after_a_restart_without_an_event_log_a_resumed_stream_gets_a_gap_before_the_stored_end(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    config = BASE_CONFIG + "[event_log]\nenabled = false\n"
    srv = start_server(home, config=config)
    try:
        run_id = (await start_run(srv, {"input": "[[tokens 12]] [[delay 5]] go"}))["run_id"]
        done = await wait_status(srv, run_id, "completed")
    finally:
        srv.stop()
    end = int(done["last_seq"])
    assert end >= 5, done
    again = start_server(home, config=config)
    try:
        for cursor in (1, 2, end - 2):
            reply = await call(
                again, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(cursor)}
            )
            assert reply.status == 200, reply.text
            frames = frames_of(reply.text)
            assert [f["data"]["event"] for f in frames] == ["stream.gap", "run.completed"], reply.text
            assert (frames[0]["data"]["from_seq"], frames[0]["data"]["to_seq"]) == (cursor + 1, end - 1)
            assert int(frames[1]["id"]) == end and reply.text.rstrip().endswith(": stream closed")
            check_no_silent_jump(frames, cursor)
        # Right before the end there is nothing to skip; at the end, nothing to send.
        reply = await call(again, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(end - 1)})
        assert [f["data"]["event"] for f in frames_of(reply.text)] == ["run.completed"]
        reply = await call(again, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(end)})
        assert reply.status == 204
    finally:
        again.stop()


def journal_with(n: int, limit: int = 100) -> Journal:
    journal = Journal("run_x", limit)
    for i in range(n):
        journal.append("message.delta", {"delta": str(i)})
    journal.show(journal.next_seq - 1)
    return journal


def parse(frames: list[str]) -> list[dict[str, Any]]:
    return frames_of("".join(frames))


def test_a_journal_that_only_has_its_terminal_event_left_reports_the_gap_before_it() -> None:
    journal = journal_with(9)
    journal.append("run.completed", {"output": "x"}, terminal=True)
    journal.events.clear()  # past run_journal_retention_s: only the terminal event is kept
    frames, cursor = journal.after(3)
    got = parse(frames)
    assert [f["data"]["event"] for f in got] == ["stream.gap", "run.completed"]
    assert (got[0]["data"]["from_seq"], got[0]["data"]["to_seq"], cursor) == (4, 9, 10)


def test_evicted_and_never_shown_events_are_gaps_and_unshown_ones_wait() -> None:
    journal = journal_with(30, limit=10)  # seqs 21-30 kept
    frames, cursor = journal.after(5)
    got = parse(frames)
    assert got[0]["data"]["event"] == "stream.gap" and (
        got[0]["data"]["from_seq"],
        got[0]["data"]["to_seq"],
    ) == (6, 20)
    assert [int(f["id"]) for f in got[1:]] == list(range(21, 31)) and cursor == 30
    check_no_silent_jump(got, 5)
    # Events the bus has not let this process show yet are not sent…
    journal.append("message.delta", {"delta": "a"})
    journal.append("message.delta", {"delta": "b"})
    assert journal.after(30) == ([], 30) and journal.last_seq == 30
    # …and if the run was ended elsewhere, they never are: a gap up to the end committed there.
    journal.set_terminal({"event": "run.failed", "run_id": "run_x", "seq": 40, "timestamp": 0.0})
    frames, cursor = journal.after(30)
    got = parse(frames)
    assert [f["data"]["event"] for f in got] == ["stream.gap", "run.failed"] and cursor == 40
    assert (got[0]["data"]["from_seq"], got[0]["data"]["to_seq"]) == (31, 39)


async def test_a_steered_run_reads_back_after_a_restart_as_it_was_live(tmp_path: Path) -> None:
    """``run.steered`` has no core event behind it: its seq is kept in the run's record, as a
    ``run.stopping``'s, so a read from the event log numbers every event as live."""
    from tests.api.test_api_runs import SLOW_TOOL, wait_last_event

    home = tmp_path / "home"
    srv = start_server(home, config=BASE_CONFIG)
    try:
        run_id = (await start_run(srv, {"input": SLOW_TOOL}))["run_id"]
        await wait_last_event(srv, run_id, "tool.started")
        steer = await call(srv, "POST", f"/v1/runs/{run_id}/steer", {"input": "use fewer words"})
        assert steer.status == 200, steer.text
        await wait_status(srv, run_id, "completed")
        live = frames_of((await call(srv, "GET", f"/v1/runs/{run_id}/events")).text)
    finally:
        srv.stop()
    names = [f["data"]["event"] for f in live]
    assert "run.steered" in names and "run.steer_delivered" in names, names
    again = start_server(home, config=BASE_CONFIG)
    try:
        reply = await call(again, "GET", f"/v1/runs/{run_id}/events")
        frames = frames_of(reply.text)
        assert same_events(frames, live), (names, [f["data"]["event"] for f in frames])
        check_no_silent_jump(frames, 0)
    finally:
        again.stop()
