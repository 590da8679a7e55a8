"""A reply cut off by an interrupt is marked in the transcript (``cut_off``), over real stdio."""

from __future__ import annotations

from tests.tui.client import TuiProcess


def test_an_interrupted_reply_is_marked_in_history_and_by_slash_history(tui: TuiProcess) -> None:
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 2]]")
    tui.wait_event(sid, "message.delta")
    tui.call("session.interrupt", session_id=sid)
    assert tui.wait_complete(sid)["status"] == "interrupted"
    tui.wait_idle(sid)
    assert tui.turn(sid, "again")["text"] == "You said: again"
    messages = tui.call("session.history", session_id=sid)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    cut, whole = messages[1], messages[3]
    assert cut["cut_off"] == "interrupted" and cut["text"].startswith("t0 t1")
    assert "cut_off" not in whole
    shown = tui.call("command.dispatch", session_id=sid, command="/history")
    assert "Hermes (cut off): t0 t1" in shown["output"]
    assert "Hermes: You said: again" in shown["output"]
