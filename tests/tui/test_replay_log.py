"""``session.events.since`` reads the kernel's event log
(docs/reference/tui-gateway.md#sequence-numbers-and-replay): retention gaps, bad cursors, a
session that is not live, and when ``replay_epoch`` changes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.timing import eventually_sync
from tests.tui.client import TuiProcess, write_config

Spawn = Callable[..., TuiProcess]


def _epoch(tui: TuiProcess) -> str:
    epoch: str = tui.wait_event("", "gateway.ready", timeout=30)["payload"]["replay_epoch"]
    return epoch


def test_a_cursor_older_than_the_retention_gets_a_retention_gap(spawn: Spawn, home: Path) -> None:
    write_config(home, 'model = "mock:echo"\n[event_log]\nmax_events = 100\n')
    tui = spawn()
    sid = tui.create()
    early = tui.turn(sid, "[[tokens 300]]")
    assert early["status"] == "complete"
    first_seen = next(e["seq"] for e in tui.events(sid) if "seq" in e)

    def dropped() -> dict[str, Any] | None:
        tui.turn(sid, "[[tokens 300]]")
        replay: dict[str, Any] = tui.call("session.events.since", session_id=sid, last_seen=first_seen)
        return replay if replay["events"][0]["type"] == "session.gap" else None

    replay = eventually_sync(dropped, timeout=60, interval=0.05, what="retention to drop old chunks")
    gap = replay["events"][0]
    assert gap["payload"]["reason"] == "retention" and replay["truncated"] is True
    assert gap["payload"]["first_seq"] == first_seen + 1 and gap["seq"] == gap["payload"]["last_seq"]
    rest = [e["seq"] for e in replay["events"][1:]]
    assert rest and rest[0] > gap["seq"] and rest == sorted(set(rest))
    assert rest[-1] == replay["latest_seq"]


def test_bad_cursors_and_unknown_sessions(spawn: Spawn) -> None:
    tui = spawn()
    sid = tui.create()
    tui.turn(sid, "hello")
    for bad in ("3", -1, 1.5, True, None):
        err = tui.error("session.events.since", session_id=sid, last_seen=bad)
        assert err.code == -32602 and err.data["param"] == "last_seen", bad
    latest = tui.call("session.events.since", session_id=sid, last_seen=0)["latest_seq"]
    ahead = tui.error("session.events.since", session_id=sid, last_seen=latest + 10**6)
    assert ahead.code == -32602 and "ahead" in ahead.message and ahead.data["problem"] == "ahead"
    assert ahead.data["head"] >= latest
    nobody = "20990101_000000_ffffff"
    unknown = tui.error("session.events.since", session_id=nobody, last_seen=0)
    assert unknown.code == 4001 and unknown.data == {"session_id": nobody, "resumable": False}
    assert tui.call("session.events.since", session_id=sid, last_seen=latest)["events"] == []


def test_a_closed_session_replays_after_a_clean_restart(spawn: Spawn) -> None:
    """events.since opens a stored session that is not live; the numbers continue, same epoch."""
    first = spawn()
    epoch = _epoch(first)
    sid = first.create()
    first.turn(sid, "before")
    had = [e for e in first.events(sid) if "seq" in e]
    first.close()
    second = spawn()
    assert _epoch(second) == epoch
    replay = second.call("session.events.since", session_id=sid, last_seen=0)
    replayed = {(r["seq"], r["type"]) for r in replay["events"]}
    assert all((e["seq"], e["type"]) in replayed for e in had if not e["type"].endswith("delta"))
    assert replay["truncated"] is False
    assert not [e for e in replay["events"] if e["type"] == "session.gap"]
    done = second.turn(sid, "after")
    assert done["text"] == "You said: after"
    live = [e["seq"] for e in second.events(sid) if "seq" in e]
    assert live[0] > replay["latest_seq"]


def test_memory_storage_gets_a_new_epoch_on_every_start(spawn: Spawn, home: Path) -> None:
    write_config(home, 'model = "mock:echo"\n[storage]\nbackend = "memory"\n')
    first = spawn()
    epoch = _epoch(first)
    sid = first.create()
    first.turn(sid, "gone with the process")
    first.close()
    second = spawn()
    assert _epoch(second) != epoch
    err = second.error("session.events.since", session_id=sid, last_seen=3)
    assert err.code == 4001 and err.data["resumable"] is False


def test_with_the_log_off_the_ring_numbers_every_frame(spawn: Spawn, home: Path) -> None:
    write_config(home, 'model = "mock:echo"\n[event_log]\nenabled = false\n')
    first = spawn()
    epoch = _epoch(first)
    sid = first.create()
    first.turn(sid, "one")
    seqs = [e["seq"] for e in first.events(sid)]
    assert seqs == list(range(1, len(seqs) + 1))
    replay = first.call("session.events.since", session_id=sid, last_seen=2)
    assert [e["seq"] for e in replay["events"]] == seqs[2:]
    first.close()
    second = spawn()
    assert _epoch(second) != epoch
