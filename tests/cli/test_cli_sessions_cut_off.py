"""``hermes sessions show`` marks a reply that stopped early, as every other surface does."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import run_hermes
from tests.tui.client import TuiProcess


def test_sessions_show_marks_an_interrupted_reply(home: Path) -> None:
    tui = TuiProcess(home, env={"HERMES_MODEL": "mock:echo"})
    try:
        tui.wait_event("", "gateway.ready", timeout=20)
        sid = tui.create()
        tui.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 2]]")
        tui.wait_event(sid, "message.delta")
        tui.call("session.interrupt", session_id=sid)
        assert tui.wait_complete(sid)["status"] == "interrupted"
        tui.wait_idle(sid)
        assert tui.turn(sid, "again")["text"] == "You said: again"
    finally:
        assert tui.close() == 0
    shown = run_hermes(home, "sessions", "show", sid)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    cut = lines.index("[assistant (cut off: interrupted)]")
    assert lines[cut + 1].startswith("  t0 t1")
    assert lines[-2:] == ["[assistant]", "  You said: again"]
