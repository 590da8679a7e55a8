"""Sessions in upstream's Ink TUI on our gateway: the session switcher, resuming after a restart,
``/retry`` and ``/undo`` against ``session.history``, and ``/compress``
(docs/protocols/tui-gateway.md#using-the-ink-tui)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.client import TuiProcess
from tests.tui.ink.bundle import skip_unless_wanted

pytestmark = skip_unless_wanted


def _sid(tui) -> str:
    return str(tui.recording.result_of("session.create")["result"]["session_id"])


def _row(screen: str, needle: str) -> str:
    return next(line for line in screen.splitlines() if needle in line)


def test_switcher_second_session_switch_and_close(ink) -> None:
    tui = ink()
    tui.ready()
    first = _sid(tui)
    tui.submit("alpha prompt")
    tui.wait_for("You said: alpha prompt")
    tui.submit("/sessions")
    tui.wait_for("1 live · 0 resumable")
    tui.keys("C-n")  # a new live session; the first keeps running
    tui.wait_request("session.create", count=2)
    tui.wait_for("new live session started")
    second = str(tui.recording.result_of("session.create", -1)["result"]["session_id"])
    assert second != first
    tui.wait_for(lambda s: f"Session: {second}" in s and "─ ready" in s, what="the new session")
    assert tui.recording.requests("session.close") == []
    tui.submit("beta prompt")
    tui.wait_for("You said: beta prompt")
    tui.submit("/sessions")
    screen = tui.wait_for("2 live · 0 resumable")
    assert "▸" in _row(screen, "beta prompt") and "current" in _row(screen, "beta prompt")
    tui.keys("Up")
    tui.wait_for(lambda s: "▸" in _row(s, "alpha prompt"), what="the first session selected")
    tui.keys("Enter")
    screen = tui.wait_for(f"Session: {first}")
    assert "You said: alpha prompt" in screen and "beta prompt" not in screen
    assert tui.recording.requests("session.activate")[-1]["params"]["session_id"] == first
    tui.submit("/sessions")
    tui.wait_for("2 live · 0 resumable")
    tui.keys("Down")
    tui.wait_for(lambda s: "▸" in _row(s, "beta prompt"), what="the second session selected")
    tui.keys("C-d")
    tui.wait_for("1 live · 1 resumable")  # closed here, still stored
    assert tui.recording.requests("session.close")[-1]["params"]["session_id"] == second
    tui.keys("Escape")
    tui.wait_gone("1 live · 1 resumable")
    tui.submit("gamma prompt")
    tui.wait_for("You said: gamma prompt")
    assert tui.recording.requests("prompt.submit")[-1]["params"]["session_id"] == first
    assert tui.recording.errors() == []


def test_resume_a_session_after_restarting_the_tui(ink) -> None:
    tui = ink()
    tui.ready()
    sid = _sid(tui)
    tui.submit("remember the lighthouse")
    tui.wait_for("You said: remember the lighthouse")
    tui.close()
    again = ink()
    again.ready()
    again.submit("/sessions")
    screen = again.wait_for("1 live · 1 resumable")
    assert "remember the lighthouse" in screen
    again.keys("Down")
    again.wait_for(lambda s: "▸" in _row(s, "remember the lighthouse"), what="the stored session selected")
    again.keys("Enter")
    screen = again.wait_for(f"Session: {sid}")
    assert "You said: remember the lighthouse" in screen
    assert again.recording.requests("session.resume")[-1]["params"]["session_id"] == sid
    again.submit("and now?")
    again.wait_for("You said: and now?")
    assert again.recording.requests("prompt.submit")[-1]["params"]["session_id"] == sid
    assert again.recording.errors() == []


def _transcript(screen: str) -> list[str]:
    """The user (❯) and assistant (┊) lines of the transcript, the input line left out."""
    lines = [line.strip() for line in screen.splitlines()]
    out = []
    for line in lines[:-1]:
        if line.startswith("❯ "):
            out.append(line[2:].split("  ")[0].strip())
        elif line.startswith("┊ "):
            out.append(line[2:].split("  ┃")[0].strip())
    return out


def test_retry_and_undo_then_screen_and_history_agree(ink, home: Path, workspace: Path) -> None:
    """``/retry`` (undo the last exchange and send it again) and ``/undo`` reach the gateway as
    ``session.undo``; after the view is reloaded the transcript on screen is ``session.history``.

    The Ink TUI trims its own transcript after these commands only up to the command line it has
    just printed, so before a reload the old exchange is still drawn; that is the TUI's own
    behaviour, the same on upstream's gateway.
    """
    tui = ink()
    tui.ready()
    sid = _sid(tui)
    for word in ("one", "two", "three"):
        tui.submit(f"say {word}")
        tui.wait_for(f"You said: say {word}")
    tui.submit("/retry")
    tui.wait_request("session.undo")
    tui.wait_request("prompt.submit", count=4)
    assert [r["params"]["text"] for r in tui.recording.requests("prompt.submit")][-1] == "say three"
    tui.wait_event("message.complete", count=4)
    tui.wait_for("─ ready")
    tui.submit("/undo")
    tui.wait_for("undid 2 messages")
    assert tui.recording.result_of("session.undo", -1)["result"] == {"removed": 2}
    tui.submit("/sessions")  # reload the view: Enter on the current session activates it again
    tui.wait_for("1 live")
    tui.keys("Enter")
    tui.wait_request("session.activate")
    expected = ["say one", "You said: say one", "say two", "You said: say two"]
    screen = tui.wait_for(lambda s: _transcript(s) == expected, what="the reloaded transcript")
    assert "say three" not in screen
    tui.close()
    with TuiProcess(home, cwd=workspace) as gateway:
        gateway.call("session.resume", session_id=sid)
        history = [m["text"] for m in gateway.call("session.history", session_id=sid)["messages"]]
    assert history == expected


def test_compress(ink) -> None:
    tui = ink()
    tui.ready()
    for word in ("red", "green", "blue"):
        tui.submit(f"colour {word}")
        tui.wait_for(f"You said: colour {word}")
    tui.submit("/compress")
    screen = tui.wait_for("compressed")
    result = tui.recording.result_of("session.compress")["result"]
    assert result["removed"] > 0 and f"compressed {result['removed']} messages" in screen
    assert "Summary of" in screen  # the summary row replaced the older turns on screen
    tui.submit("after compress")
    tui.wait_for("You said: after compress")
    assert tui.recording.errors() == []
