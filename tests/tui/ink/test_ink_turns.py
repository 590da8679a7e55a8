"""Turns in upstream's Ink TUI on our gateway: streaming with the status bar, the four approval
answers, clarify/sudo/secret from the keyboard with their expiry, and Ctrl+C
(docs/protocols/tui-gateway.md#using-the-ink-tui)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.timing import eventually_sync, scaled
from tests.tui.ink.bundle import skip_unless_wanted
from tests.tui.ink.screen import approval_shown, ink_config

pytestmark = skip_unless_wanted

GUARD = 'go [[tool terminal {"command": "echo hermes-guard-test"}]]'
FAKE_SUDO = """#!/bin/sh
# A stand-in for sudo: never passwordless; with -S it records the password and runs the command.
if [ "$1" = "-n" ]; then exit 1; fi
if [ "$1" = "-S" ]; then
  shift
  read -r pw
  printf '%s' "$pw" > "$(dirname "$0")/password-seen"
fi
exec "$@"
"""


def _status_bar(screen: str) -> str:
    return next((line for line in reversed(screen.splitlines()) if line.startswith(" ─ ")), "")


def test_a_reply_streams_and_the_status_bar_shows_model_and_usage(ink) -> None:
    tui = ink()
    tui.ready()
    tui.submit("count [[tokens 40]] [[delay 60]]")
    # part of the reply is on screen while the rest is still coming
    partial = tui.wait_for(lambda s: " t5 " in s and " t39" not in s, what="a partial reply")
    assert "ready" not in _status_bar(partial)
    screen = tui.wait_for(lambda s: " t39" in s and "─ ready" in s, what="the whole reply")
    bar = _status_bar(screen)
    assert "mock:echo" in bar
    assert re.search(r"│ \d+/[\d.]+k │", bar), bar  # context used / window, from session.info usage
    deltas = tui.recording.events("message.delta")
    assert len(deltas) > 1 and "".join(d["payload"]["text"] for d in deltas).split()[-1] == "t39"
    assert tui.recording.events("message.complete")[-1]["payload"]["status"] == "complete"
    assert tui.recording.errors() == []


def _approve(tui, keys: list[str]) -> str:
    """Answer the approval by pressing ``keys``; before Enter, wait for the selection to show."""
    tui.submit(GUARD)
    tui.wait_for(approval_shown, what="the approval dialog")
    for key in keys:
        if key == "Enter":
            tui.wait_for(f"▸ {1 + keys.count('Down')}.")
        tui.keys(key)
    return tui.wait_for(lambda s: "Done:" in s and "─ ready" in s, what="the turn to end")


def _choices(tui) -> list[str]:
    return [r["params"]["choice"] for r in tui.recording.requests("approval.respond")]


def test_approval_allow_once_asks_again_next_time(ink) -> None:
    tui = ink()
    tui.ready()
    screen = _approve(tui, ["1"])
    assert "Done: hermes-guard-test" in screen
    tui.submit("again " + GUARD)
    tui.wait_event("approval.request", count=2)
    tui.wait_for(approval_shown, what="a second approval dialog")
    tui.keys("Enter")  # the first option, "Allow once", is selected
    tui.wait_for(lambda s: s.count("Done: hermes-guard-test") == 2 and "─ ready" in s)
    assert _choices(tui) == ["once", "once"]


def test_approval_for_the_session_is_not_asked_again(ink) -> None:
    tui = ink()
    tui.ready()
    _approve(tui, ["Down", "Enter"])
    assert _choices(tui) == ["session"]
    tui.submit("again " + GUARD)
    tui.wait_for(lambda s: s.count("Done: hermes-guard-test") == 2 and "─ ready" in s)
    assert len(tui.recording.events("approval.request")) == 1


def test_approval_always_holds_in_a_new_session(ink, home: Path) -> None:
    tui = ink()
    tui.ready()
    _approve(tui, ["3"])
    assert _choices(tui) == ["always"]
    tui.submit("/new")
    tui.wait_for("Yes, start a new session")  # not the title: it follows a "⚠" (see approval_shown)
    tui.keys("y")
    eventually_sync(lambda: len(tui.recording.requests("session.create")) == 2, what="a second session")
    tui.wait_for(lambda s: "new session started" in s and "─ ready" in s)
    tui.submit("fresh " + GUARD)
    tui.wait_for(lambda s: "Done: hermes-guard-test" in s and "─ ready" in s)
    assert len(tui.recording.events("approval.request")) == 1


def test_approval_deny_does_not_run_the_tool(ink, workspace: Path) -> None:
    tui = ink()
    tui.ready()
    marker = workspace / "ran"
    tui.submit('go [[tool terminal {"command": "echo hermes-guard-test > ran"}]]')
    tui.wait_for(approval_shown, what="the approval dialog")
    tui.keys("Escape")
    tui.wait_for(lambda s: "Done:" in s and "─ ready" in s)
    assert _choices(tui) == ["deny"]
    complete = tui.recording.events("tool.complete")[-1]["payload"]
    assert complete.get("error") is True and not marker.exists()
    assert tui.recording.errors() == []


def test_clarify_answered_with_the_arrow_keys_then_one_expires(ink, home: Path) -> None:
    ink_config(home, f'model = "mock:echo"\n[questions]\nclarify_timeout_s = {scaled(5)}\n')
    tui = ink()
    tui.ready()
    tui.submit('ask [[tool clarify {"question": "Which colour?", "choices": ["red", "blue"]}]]')
    tui.wait_for("Other (type your answer)")
    tui.keys("Down")
    tui.wait_for("▸ 2. blue")
    tui.keys("Enter")
    screen = tui.wait_for(lambda s: "Done: The user answered: blue" in s and "─ ready" in s)
    assert "timed out" not in screen
    answered = tui.recording.requests("clarify.respond")[-1]["params"]
    assert answered["answer"] == "blue"
    tui.submit('again [[tool clarify {"question": "Name it?"}]]')
    tui.wait_for("Enter send · Esc cancel")
    screen = tui.wait_for(lambda s: "timed out" in s and "─ ready" in s, timeout=30)
    assert "Done: The user did not answer." in screen
    assert tui.recording.events("clarify.expire")[-1]["payload"]["reason"] == "timeout"
    assert len(tui.recording.requests("clarify.respond")) == 1


def _fake_sudo(tmp_path: Path) -> Path:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "sudo"
    script.write_text(FAKE_SUDO, encoding="utf-8")
    script.chmod(0o755)
    return bindir


def test_sudo_password_typed_masked_then_one_expires(ink, home: Path, tmp_path: Path) -> None:
    ink_config(home, f'model = "mock:echo"\n[questions]\nsudo_timeout_s = {scaled(5)}\n')
    bindir = _fake_sudo(tmp_path)
    tui = ink(env={"PATH": f"{bindir}:{os.environ.get('PATH', '')}"})
    tui.ready()
    tui.submit("[[sudo echo root-things]]")
    tui.wait_for(approval_shown, what="the approval dialog")
    tui.keys("1")
    tui.wait_for("sudo password required")
    tui.type("hunter2-pw")
    screen = tui.wait_for("**********")
    assert "hunter2-pw" not in screen
    tui.keys("Enter")
    screen = tui.wait_for(lambda s: "Done: root-things" in s and "─ ready" in s)
    assert (bindir / "password-seen").read_text(encoding="utf-8") == "hunter2-pw"
    assert "hunter2-pw" not in screen
    assert "hunter2-pw" not in "".join(str(f) for f in tui.recording.sent())
    tui.submit("[[sudo echo later]]")
    tui.wait_for(approval_shown, what="the approval dialog")
    tui.keys("1")
    tui.wait_for("sudo password required")
    tui.wait_gone("sudo password required", timeout=30)  # sudo.expire clears the prompt
    assert tui.recording.events("sudo.expire")[-1]["payload"]["reason"] == "timeout"
    tui.wait_for("─ ready")


def test_secret_typed_then_one_expires(ink, home: Path) -> None:
    ink_config(home, f'model = "mock:echo"\n[questions]\nsecret_timeout_s = {scaled(5)}\n')
    tui = ink()
    tui.ready()
    tui.submit("need a key [[secret DEMO_API_KEY]]")
    tui.wait_for("for DEMO_API_KEY")
    tui.type("s3cr3t-value")
    tui.wait_for("************")
    tui.keys("Enter")
    screen = tui.wait_for(lambda s: "Done:" in s and "─ ready" in s)
    assert "s3cr3t-value" not in screen
    assert (home / ".env").read_text(encoding="utf-8") == 'DEMO_API_KEY="s3cr3t-value"\n'
    answered = tui.recording.requests("secret.respond")[-1]["params"]
    assert answered["value"] == "s3cr3t-value"
    tui.submit("another [[secret OTHER_KEY]]")
    tui.wait_for("for OTHER_KEY")
    tui.wait_gone("for OTHER_KEY", timeout=30)  # secret.expire clears the prompt
    assert tui.recording.events("secret.expire")[-1]["payload"]["reason"] == "timeout"


def test_ctrl_c_interrupts_a_long_reply_and_the_next_prompt_works(ink) -> None:
    tui = ink()
    tui.ready()
    tui.submit("long [[tokens 3000]] [[delay 20]]")
    tui.wait_for(" t20 ")
    tui.keys("C-c")
    tui.wait_request("session.interrupt")
    screen = tui.wait_for("interrupted")
    assert " t2999" not in screen
    eventually_sync(
        lambda: any(
            e["payload"]["status"] == "interrupted" for e in tui.recording.events("message.complete")
        ),
        what="the turn to end interrupted",
    )
    tui.wait_for("─ ready", timeout=30)
    tui.submit("after the interrupt")
    tui.wait_for("You said: after the interrupt")
    assert tui.recording.errors() == []
