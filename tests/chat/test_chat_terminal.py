"""``hermes chat`` in a real terminal (tmux) against ``hermes tui`` on the mock model.

What a person would see: each test types into the pane and reads the screen and the scrollback
by content. The gateway is the real one, spawned by the chat.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.chat.proxy import CuttableRelay
from tests.chat.terminal import Terminal, command_line, descendants, wait_gone
from tests.timing import eventually_sync
from tests.tui.client import HERMES, hermes_env

GUARDED = '[[tool terminal {"command": "echo hermes-guard-test"}]]'
Open = Callable[..., Terminal]


def terminal_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of the chat in the pane: nothing of the developer's Hermes settings."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "HERMES_HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        env["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
    env.update(extra)
    return env


@pytest.fixture
def open_chat(home: Path, work: Path, tmp_path: Path) -> Iterator[Open]:
    """Start ``hermes chat ARGS`` (or another command) in a tmux pane of its own."""
    started: list[Terminal] = []

    def start(*args: str, argv: list[str] | None = None, cwd: Path | None = None, **env: str) -> Terminal:
        root = tmp_path / f"tmux{len(started)}"
        root.mkdir()
        term = Terminal(root, argv or [HERMES, "chat", *args], env=terminal_env(home, **env), cwd=cwd or work)
        started.append(term)
        return term

    yield start
    for term in started:
        term.close()


def ready(term: Terminal) -> Terminal:
    """Wait until the chat's session is open (its model shows in the toolbar)."""
    term.wait_screen("mock:echo", timeout=60)
    return term


def test_hermes_alone_on_a_terminal_chats_and_the_reply_is_rendered_markdown(open_chat: Open) -> None:
    term = ready(open_chat(argv=[HERMES]))
    term.type("hello **bold** and `code`")
    term.keys("Enter")
    shown = term.wait_for("You said: hello bold and code")
    assert "❯ hello **bold** and `code`" in shown  # the prompt as typed, the reply rendered
    term.type("count [[tokens 400]] [[delay 2]]")
    term.keys("Enter")
    shown = term.wait_for("t399", timeout=60)
    words = re.findall(r"\bt\d+\b", shown)
    assert words == [f"t{i}" for i in range(400)], "every streamed token exactly once, in order"
    term.keys("C-d")
    assert term.exit_code() == 0


def test_each_approval_choice_is_one_key(open_chat: Open) -> None:
    term = ready(open_chat())
    term.type(f"first {GUARDED}")
    term.keys("Enter")
    term.wait_screen("[o] once")
    term.type("x")  # not an answer: nothing happens, the question stays
    term.keys("o")
    term.wait_for("Done: hermes-guard-test")
    assert "approved (once): echo hermes-guard-test" in term.scrollback()
    # The stray x typed nothing: once the prompt is redrawn after the turn, its line is empty
    # (a typed x would stay there, so this waits for the redraw, never for the x to go).
    eventually_sync(
        lambda: term.screen().rsplit("❯", 1)[-1].split("\n", 1)[0].strip() == "",
        timeout=10,
        interval=0.1,
        what="an empty prompt line",
    )

    term.type(f"second {GUARDED}")
    term.keys("Enter")
    term.wait_screen("[s] this session")
    term.keys("s")
    term.wait_for("Done: hermes-guard-test", count=2)
    term.type(f"third {GUARDED}")  # allowed for this session now: no question
    term.keys("Enter")
    shown = term.wait_for("Done: hermes-guard-test", count=3)
    assert shown.count("approved (") == 2

    term.type("/new")
    term.keys("Enter")
    term.wait_for("Started new session")
    term.type(f"fourth {GUARDED}")  # a new session asks again
    term.keys("Enter")
    term.wait_screen("[d] deny")
    term.keys("d")
    shown = term.wait_for("The user declined this tool call")
    assert "denied: echo hermes-guard-test" in shown

    term.type(f"fifth {GUARDED}")
    term.keys("Enter")
    term.wait_screen("[a] always")
    term.keys("a")
    term.wait_for("approved (always)")
    term.type("/new")
    term.keys("Enter")
    term.wait_for("Started new session", count=2)
    term.type(f"sixth {GUARDED}")  # always: even a new session does not ask
    term.keys("Enter")
    shown = term.wait_for("Done: hermes-guard-test", count=5)
    assert shown.count("approved (") == 3


def test_clarify_takes_a_number_or_typed_text(open_chat: Open) -> None:
    term = ready(open_chat())
    term.type('pick [[tool clarify {"question": "Which colour?", "choices": ["red", "blue"]}]]')
    term.keys("Enter")
    term.wait_screen("[2] blue")
    term.keys("2")
    term.wait_for("Done: The user answered: blue")
    term.type('again [[tool clarify {"question": "Any other?", "choices": ["red", "blue"]}]]')
    term.keys("Enter")
    term.wait_screen("? Any other?")  # the question, not the prompt typed
    term.type("green, please")
    term.keys("Enter")
    shown = term.wait_for("Done: The user answered: green, please")
    assert "answered: green, please" in shown


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


def test_a_secret_is_never_shown_logged_or_kept_in_the_history(
    open_chat: Open, home: Path, tmp_path: Path
) -> None:
    secret, password = "s3cr3t-VALUE-4242", "pa55-WORD-9090"
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "sudo").write_text(FAKE_SUDO, encoding="utf-8")
    (bindir / "sudo").chmod(0o755)
    term = ready(open_chat(PATH=f"{bindir}:{os.environ.get('PATH', '')}"))
    term.type("store it [[secret MY_TOKEN]]")
    term.keys("Enter")
    term.wait_screen("Enter MY_TOKEN")
    term.type(secret)
    assert secret not in term.screen()  # hidden while typed
    term.keys("Enter")
    term.wait_for("MY_TOKEN: value given (hidden)")
    term.wait_for("Done: stored: MY_TOKEN")
    term.type("root [[sudo echo root-things]]")
    term.keys("Enter")
    term.wait_screen("[o] once")
    term.keys("o")
    term.wait_screen("sudo password")
    term.type(password)
    term.keys("Enter")
    term.wait_for("password given")
    term.wait_for("Done: root-things")
    assert (bindir / "password-seen").read_text() == password  # it reached the command
    term.keys("C-d")
    assert term.exit_code() == 0
    captured = term.ansi() + term.scrollback()
    logs = "".join(p.read_text(errors="replace") for p in (home / "logs").glob("*") if p.is_file())
    history = "".join(p.read_text(errors="replace") for p in (home / "chat" / "history").glob("*"))
    assert "store it [[secret MY_TOKEN]]" in history  # the prompts are kept…
    for value in (secret, password):  # …the values never are
        assert value not in captured
        assert value not in logs
        assert value not in history


def test_ctrl_c_stops_the_turn_and_twice_leaves(open_chat: Open) -> None:
    term = ready(open_chat())
    term.type("long [[tokens 3000]] [[delay 20]]")
    term.keys("Enter")
    term.wait_for("t20 ")
    term.keys("C-c")
    shown = term.wait_for("⚠ interrupted")
    assert "t2999" not in shown
    term.wait_screen("idle")
    term.type("after")  # sent within 2 s of that Ctrl+C: the next one does not leave yet
    term.keys("Enter")
    term.wait_for("You said: after")
    term.wait_screen("idle")
    term.keys("C-c")
    term.wait_for("press Ctrl+C again within 2 s")
    term.keys("C-c")
    assert term.exit_code() == 0


def test_model_is_completed_and_switched(open_chat: Open) -> None:
    term = ready(open_chat())
    term.type("/mo")
    term.wait_screen("Show the current model")  # the completion menu, with the command's summary
    term.keys("Tab")
    term.wait_screen("❯ /model")
    term.type(" mock:al")
    term.wait_screen("mock:alt")
    term.keys("Tab")
    term.wait_screen("❯ /model mock:alt")
    term.keys("Enter")
    term.wait_for("Model switched to mock:alt")
    term.type("hi")
    term.keys("Enter")
    term.wait_for("alt: You said: hi")
    term.wait_screen("mock:alt ·")


def test_a_restarted_client_resumes_the_conversation(open_chat: Open) -> None:
    first = ready(open_chat())
    first.type("remember the number seven")
    first.keys("Enter")
    first.wait_for("You said: remember the number seven")
    first.keys("C-d")
    assert first.exit_code() == 0
    second = open_chat("--continue", "--model", "mock:history")
    shown = second.wait_for("resumed", timeout=60)
    assert "❯ remember the number seven" in shown and "You said: remember the number seven" in shown
    second.type("and now?")
    second.keys("Enter")
    second.wait_for("Turns: remember the number seven | and now?")


def test_the_gateway_killed_mid_reply_is_restarted_and_nothing_is_lost(open_chat: Open) -> None:
    term = ready(open_chat())
    term.type("before the crash")
    term.keys("Enter")
    term.wait_for("You said: before the crash")
    term.type("slow [[tokens 2000]] [[delay 30]]")
    term.keys("Enter")
    term.wait_for("t30 ")
    gateways = [p for p in descendants(term.pane_pid()) if command_line(p).rstrip().endswith(" tui")]
    assert len(gateways) == 1, [command_line(p) for p in descendants(term.pane_pid())]
    os.kill(gateways[0], signal.SIGKILL)
    wait_gone(gateways[0])
    term.wait_for("the gateway stopped", timeout=30)
    term.wait_for("reconnected", timeout=60)
    term.wait_screen("idle", timeout=60)
    term.type("after the crash")
    term.keys("Enter")
    shown = term.wait_for("You said: after the crash", timeout=60)
    assert shown.count("You said: before the crash") == 1  # the conversation is intact…
    words = re.findall(r"\bt\d+\b", shown)
    assert words == [f"t{i}" for i in range(len(words))], "…with no token shown twice or skipped"
    assert "cut off" in shown
    restarted = [p for p in descendants(term.pane_pid()) if command_line(p).rstrip().endswith(" tui")]
    assert len(restarted) == 1 and restarted != gateways


def test_an_expired_question_clears_its_prompt(open_chat: Open, home: Path) -> None:
    (home / "config.toml").write_text(
        'model = "mock:echo"\n[titles]\nrefine = false\n[questions]\nclarify_timeout_s = 2\n',
        encoding="utf-8",
    )
    term = ready(open_chat())
    term.type('pick [[tool clarify {"question": "Too late?", "choices": ["yes", "no"]}]]')
    term.keys("Enter")
    term.wait_screen("? Too late?")
    term.wait_for("the question expired (timeout)", timeout=30)
    term.wait_screen("idle", timeout=30)
    assert "? Too late?" not in term.screen()  # the question is gone from above the input
    term.type("still here")
    term.keys("Enter")
    term.wait_for("You said: still here")


@pytest.fixture
def ws_gateway(home: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A ``hermes tui --ws`` with a token file; yields its URL and the token file."""
    token_file = tmp_path / "gateway.token"
    token_file.write_text("chat-test-token-0123456789abcdef\n", encoding="utf-8")
    proc = subprocess.Popen(
        [HERMES, "tui", "--ws", "127.0.0.1:0", "--token-file", str(token_file)],
        env=hermes_env(home),
        cwd=home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    url = ""
    while not url:
        line = proc.stderr.readline()
        assert line, "hermes tui --ws exited before listening"
        found = re.search(r"listening on (ws://\S+)", line)
        url = found.group(1) if found else ""
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its stderr drained
    yield url, token_file
    proc.terminate()
    proc.wait(timeout=30)


def test_attach_over_websocket_with_a_token_and_refused_without(
    open_chat: Open, ws_gateway: tuple[str, Path]
) -> None:
    url, token_file = ws_gateway
    term = ready(open_chat("--attach", url, "--token-file", str(token_file)))
    term.type("over the socket")
    term.keys("Enter")
    term.wait_for("You said: over the socket")
    term.keys("C-d")
    assert term.exit_code() == 0
    refused = open_chat("--attach", url, HERMES_TUI_TOKEN="not-the-token")
    shown = refused.wait_for("EXITED", timeout=60)
    assert "the gateway refused the token (close code 4401)" in shown
    assert refused.exit_code() == 1
    assert "not-the-token" not in shown
    tokenless = open_chat("--attach", url)  # no token at all (this gateway wrote none in the home)
    shown = tokenless.wait_for("EXITED", timeout=60)
    assert "no token for --attach: pass --token-file or set HERMES_TUI_TOKEN" in shown
    assert tokenless.exit_code() == 2  # a usage error: nothing was tried


def test_a_dropped_connection_is_replayed_from_the_last_event_shown(
    open_chat: Open, ws_gateway: tuple[str, Path]
) -> None:
    url, token_file = ws_gateway
    relay = CuttableRelay(int(url.split(":")[2].split("/")[0]))
    try:
        term = ready(
            open_chat("--attach", f"ws://127.0.0.1:{relay.port}/api/ws", "--token-file", str(token_file))
        )
        term.type("slow [[tokens 300]] [[delay 20]]")
        term.keys("Enter")
        term.wait_for("t40 ")
        relay.cut()
        term.wait_for("reconnected; replayed from the last event shown", timeout=60)
        shown = term.wait_for("t299", timeout=60)
        words = re.findall(r"\bt\d+\b", shown)
        assert words == [f"t{i}" for i in range(300)], "no token lost or repeated across the drop"
        assert relay.accepted == 2
    finally:
        relay.close()


def test_new_typed_during_a_turn_waits_and_the_whole_reply_is_shown(open_chat: Open) -> None:
    term = ready(open_chat())
    term.type("long [[tokens 120]] [[delay 25]]")
    term.keys("Enter")
    term.wait_for("t5 ")
    term.type("/new")  # typed while the reply still streams
    term.keys("Enter")
    shown = term.wait_for("Started new session")
    assert "/new runs when this turn ends" in shown
    # the running turn was shown to its end before the session changed
    assert shown.index("t119") < shown.index("Started new session"), shown
