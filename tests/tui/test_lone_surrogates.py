"""A lone surrogate escape (``"\\ud800"``) is a parse error on the TUI gateway; nothing runs."""

from __future__ import annotations

from tests.tui.client import TuiProcess


def test_a_lone_surrogate_is_refused_and_the_session_keeps_working(tui: TuiProcess) -> None:
    sid = tui.create()
    for text in (b"x\\ud800y", b"\\udfff", b"end \\ud83d"):
        before = len(tui.col.null_errors)
        tui.send_raw(
            b'{"jsonrpc":"2.0","id":9,"method":"prompt.submit","params":{"session_id":"%s","text":"%s"}}\n'
            % (sid.encode(), text)
        )
        error = tui.col.wait(lambda start=before: tui.col.null_errors[start:], timeout=10)[0]
        assert error["id"] is None and error["error"]["code"] == -32700, (text, error)
    assert tui.turn(sid, "smile \U0001f600")["text"] == "You said: smile \U0001f600"
    assert tui.turn(sid, "second")["text"] == "You said: second"
    texts = [m.get("text") for m in tui.call("session.history", session_id=sid)["messages"]]
    assert texts == ["smile \U0001f600", "You said: smile \U0001f600", "second", "You said: second"]
