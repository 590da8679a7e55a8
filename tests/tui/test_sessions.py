"""Session lifecycle over real stdio (checks 7, 8, 25, 26, 29).

Also the Pi rows get_state, get_messages, switch_session, fork and compact.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.tui.client import TuiProcess


def test_one_durable_id_survives_a_restart(spawn: Callable[..., TuiProcess]) -> None:
    """Check 7 / Pi switch_session: session_id == stored id; after a restart resume shows the same row ids."""
    first = spawn()
    created = first.call("session.create", title="keep me")
    sid = created["session_id"]
    assert created["stored_session_id"] == sid == created["session_key"]
    assert created["info"]["session_id"] == sid and created["info"]["approval_mode"] == "accept_edits"
    first.turn(sid, "remember this")
    rows = first.call("session.history", session_id=sid)["messages"]
    assert first.close() == 0
    second = spawn()
    resumed = second.call("session.resume", session_id=sid)
    assert resumed["resumed"] == sid and resumed["session_id"] == sid
    assert [(m["row_id"], m["text"]) for m in resumed["messages"]] == [(m["row_id"], m["text"]) for m in rows]
    again = second.call("session.history", session_id=sid)["messages"]
    assert [(m["row_id"], m["role"]) for m in again] == [(m["row_id"], m["role"]) for m in rows]
    by_title = second.call("session.resume", session_id="keep me")
    assert by_title["session_id"] == sid
    done = second.turn(sid, "and this")
    assert done["text"] == "You said: and this"
    assert second.wait_event(sid, "message.start", count=1)["seq"] >= 1


def test_unknown_ids(tui: TuiProcess) -> None:
    """Check 8: unknown history → 4001; resume unknown → 4007; resume live → same id; close → false."""
    err = tui.error("session.history", session_id="20990101_000000_ffffff")
    assert err.code == 4001 and err.data == {"session_id": "20990101_000000_ffffff", "resumable": False}
    assert tui.error("session.resume", session_id="20990101_000000_ffffff").code == 4007
    assert tui.error("session.resume").code == 4006
    sid = tui.create()
    assert tui.call("session.resume", session_id=sid)["session_id"] == sid
    assert tui.call("session.close", session_id="nope") == {"closed": False}
    assert tui.call("session.close", session_id=sid) == {"closed": True}
    assert tui.call("session.close", session_id=sid) == {"closed": False}


def test_closed_stored_session_is_resumable(tui: TuiProcess) -> None:
    """A closed session with rows is not live (4001, resumable:true) and resumes with continued seq."""
    sid = tui.create()
    tui.turn(sid, "hi")
    last_seq = [e for e in tui.events(sid) if "seq" in e][-1]["seq"]
    tui.call("session.close", session_id=sid)
    err = tui.error("session.status", session_id=sid)
    assert err.code == 4001 and err.data["resumable"] is True
    tui.call("session.resume", session_id=sid)
    tui.turn(sid, "again")
    later = [e["seq"] for e in tui.events(sid) if "seq" in e]
    # The numbers are the session's event log's: they continue after the close, never repeat.
    assert later == sorted(set(later)) and later[0] >= 1 and later[-1] > last_seq


def test_status_history_usage_title(tui: TuiProcess) -> None:
    """Pi get_state / get_messages: structured status fields, history with row ids, usage, titles."""
    sid = tui.create()
    assert tui.call("session.title", session_id=sid, title="My work") == {"title": "My work", "pending": True}
    assert tui.error("session.title", session_id=sid, title="  ").code == 4021
    assert tui.error("session.title", session_id=sid, title="x" * 201).code == 4022
    assert tui.call("session.usage", session_id=sid)["total"] == 0
    tui.turn(sid, "count my words please")
    status = tui.call("session.status", session_id=sid)
    assert status["session_id"] == sid and status["running"] is False and status["status"] == "idle"
    assert status["model"] == "mock:echo" and status["provider"] == "mock"
    assert status["message_count"] == 2 and status["open_requests"] == []
    assert "Session ID: " + sid in status["output"] and "Agent Running: No" in status["output"]
    history = tui.call("session.history", session_id=sid)
    assert history["count"] == 2
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert all(isinstance(m["row_id"], int) for m in history["messages"])
    usage = tui.call("session.usage", session_id=sid)
    assert usage == tui.events(sid, "message.complete")[-1]["payload"]["usage"]
    assert tui.call("session.title", session_id=sid) == {"title": "My work", "session_key": sid}
    listed = {s["id"]: s for s in tui.call("session.list")["sessions"]}
    assert listed[sid]["title"] == "My work" and listed[sid]["source"] == "tui"


def test_compress_in_place(tui: TuiProcess) -> None:
    """Check 25 / Pi compact: same id, a summary row, fewer messages; during a turn → 4009."""
    sid = tui.create()
    for text in ("alpha", "beta", "gamma"):
        tui.turn(sid, text)
    result = tui.call("session.compress", session_id=sid)
    assert result["status"] == "compressed"
    assert result["after_messages"] < result["before_messages"]
    assert result["info"]["session_id"] == sid
    kinds = [m["display_kind"] for m in result["messages"]]
    assert kinds[0] == "summary"
    updates = [e["payload"]["kind"] for e in tui.events(sid, "status.update")]
    assert updates[-2:] == ["compressing", "ready"]
    tui.call("prompt.submit", session_id=sid, text="[[tokens 300]] [[delay 3]]")
    assert tui.error("session.compress", session_id=sid).code == 4009
    assert tui.error("session.compress", session_id=sid, focus_topic="x" * 1001).code == 4002


def test_branch(tui: TuiProcess) -> None:
    """Check 26 / Pi fork: a new id whose parent is the old one; the source is unchanged."""
    sid = tui.create()
    assert tui.error("session.branch", session_id=sid).code == 4008
    tui.turn(sid, "first")
    tui.turn(sid, "second")
    before = tui.call("session.history", session_id=sid)
    branched = tui.call("session.branch", session_id=sid, count=2, name="side quest")
    new = branched["session_id"]
    assert new != sid and branched["parent"] == sid and branched["title"] == "side quest"
    assert [m["text"] for m in branched["messages"]] == ["first", "You said: first"]
    assert tui.call("session.history", session_id=sid) == before
    assert tui.error("session.branch", session_id=sid, count=0).code == 4002
    assert tui.error("session.branch", session_id=sid, count=1, up_to_row_id=1).code == 4002
    assert tui.error("session.branch", session_id=sid, up_to_row_id=999999).code == 4018
    assert tui.turn(new, "on the branch")["text"] == "You said: on the branch"


def test_live_sessions_and_activation(tui: TuiProcess) -> None:
    """Check 29: active_list lists A and B; activate B while A runs; closed A stays in session.list."""
    a = tui.create()
    b = tui.create()
    listed = [
        s for s in tui.call("session.active_list", current_session_id=b)["sessions"] if s["id"] in (a, b)
    ]
    assert [s["id"] for s in listed] == [a, b]
    assert [s["current"] for s in listed] == [False, True]
    tui.call("prompt.submit", session_id=a, text="[[tokens 300]] [[delay 2]]")
    snap = tui.call("session.activate", session_id=b)
    assert snap["session_id"] == b and snap["running"] is False
    assert tui.turn(b, "on b")["text"] == "You said: on b"
    assert tui.wait_complete(a)["status"] == "complete"
    tui.call("session.close", session_id=a)
    assert a in [s["id"] for s in tui.call("session.list")["sessions"]]
    active = [s["id"] for s in tui.call("session.active_list")["sessions"]]
    assert b in active and a not in active
    assert tui.error("session.activate", session_id=a).code == 4001


def test_create_params(tui: TuiProcess, tmp_path: Path) -> None:
    """session.create: bad cwd → 4017; bad effort → 4002; seed messages are stored; unknown parent → 4007."""
    assert tui.error("session.create", cwd=str(tmp_path / "missing")).code == 4017
    assert tui.error("session.create", reasoning_effort="ultra").code == 4002
    assert tui.error("session.create", parent_session_id="20990101_000000_ffffff").code == 4007
    assert tui.error("session.create", messages=[{"role": "robot", "text": "x"}]).code == -32602
    seeded = tui.call("session.create", messages=[{"role": "user", "content": "seed"}], cwd=str(tmp_path))
    assert [m["text"] for m in seeded["messages"]] == ["seed"]
    assert seeded["info"]["cwd"] == str(tmp_path)


def test_session_of_a_killed_gateway_reopens_at_once(spawn: Callable[..., TuiProcess]) -> None:
    """After ``kill -9`` the dead process's writer lease does not block a restarted gateway."""
    import signal
    import time

    first = spawn()
    sid = first.create()
    first.turn(sid, "before the crash")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    second = spawn()
    started = time.monotonic()
    resumed = second.call("session.resume", session_id=sid)
    assert time.monotonic() - started < 5  # well inside the 30 s lease lifetime
    assert resumed["session_id"] == sid
    assert [m["text"] for m in resumed["messages"]] == ["before the crash", "You said: before the crash"]
    assert second.turn(sid, "after")["text"] == "You said: after"


def test_session_of_a_live_gateway_stays_locked(spawn: Callable[..., TuiProcess]) -> None:
    """A gateway that is alive keeps its session: another one is refused."""
    first = spawn()
    sid = first.create()
    first.turn(sid, "mine")
    second = spawn()
    err = second.error("session.resume", session_id=sid)
    assert err.code != -32603 and "another" in str(err.message).lower()
    assert first.turn(sid, "still mine")["text"] == "You said: still mine"


def test_compress_counts_the_messages_it_removed(tui: TuiProcess) -> None:
    """``removed`` counts history messages, not the hidden tool-call rows behind them."""
    sid = tui.create()
    tui.turn(sid, '[[tool todo {"todos": [{"id": "1", "content": "a", "status": "pending"}]}]]')
    tui.turn(sid, '[[tool todo {"todos": [{"id": "1", "content": "a", "status": "completed"}]}]]')
    tui.turn(sid, "last")
    before = tui.call("session.history", session_id=sid)["messages"]
    result = tui.call("session.compress", session_id=sid)
    assert result["status"] == "compressed"
    after_ids = {m["row_id"] for m in result["messages"]}
    gone = [m for m in before if m["row_id"] not in after_ids]
    assert result["removed"] == len(gone)
    assert result["removed"] <= result["before_messages"] == len(before)
    assert result["after_messages"] == result["before_messages"] - result["removed"] + 1
    assert str(result["removed"]) in result["summary"]["headline"]
    # A second compression removes the first summary too, and still counts what was shown.
    tui.turn(sid, "one more")
    again = tui.call("session.compress", session_id=sid)
    assert again["removed"] == again["before_messages"] - again["after_messages"] + 1


def test_list_previews_the_first_user_message(tui: TuiProcess) -> None:
    """``session.list`` fills ``preview`` with the first user message, cut to 200 characters."""
    short = tui.create()
    tui.turn(short, "what does this repository do?")
    tui.turn(short, "and the second question")
    long = tui.create()
    tui.turn(long, "word " * 100)
    listed = {s["id"]: s for s in tui.call("session.list")["sessions"]}
    assert listed[short]["preview"] == "what does this repository do?"
    assert listed[long]["preview"] == ("word " * 100)[:200]


def test_list_filters_by_folder_and_names_each_sessions_folder(tui: TuiProcess, tmp_path: Path) -> None:
    """``session.list {cwd}``: only that folder's sessions (what ``hermes chat --continue`` asks)."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    mine = tui.create(cwd=str(here))
    tui.turn(mine, "in here")
    other = tui.create(cwd=str(there))
    tui.turn(other, "over there")
    listed = tui.call("session.list", cwd=str(here))["sessions"]
    assert [s["id"] for s in listed] == [mine]
    assert listed[0]["cwd"] == str(here)
    everything = {s["id"]: s["cwd"] for s in tui.call("session.list")["sessions"]}
    assert everything[other] == str(there)
    assert tui.error("session.list", cwd=str(tmp_path / "gone")).code == 4017
