"""``hermes chat`` with stdin not a terminal: one prompt per line, plain replies, exit codes.

Each test runs the real ``hermes chat``, which spawns a real ``hermes tui`` on the mock model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.timing import eventually_sync, scaled
from tests.tui.client import HERMES, hermes_env


def chat(home: Path, cwd: Path, lines: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``hermes chat ARGS`` with ``lines`` on stdin."""
    return subprocess.run(
        [HERMES, "chat", *args],
        input=lines,
        env=hermes_env(home),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )


def test_each_line_is_a_prompt_and_replies_come_out_plain(home: Path, work: Path) -> None:
    lines = 'hello there\n\n/model mock:alt\nagain [[tool terminal {"command": "echo hi"}]]\n'
    done = chat(home, work, lines)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "You said: hello there\nModel switched to mock:alt (this session)\nalt: Done: hi\n"
    )
    assert "✓ terminal: hi" in done.stderr  # tool activity goes to stderr, like `hermes run`
    assert "\x1b[" not in done.stdout + done.stderr  # plain text, no colours


def test_a_failed_turn_exits_1_and_the_rest_is_not_run(home: Path, work: Path) -> None:
    done = chat(home, work, "one\nx [[error quota gone]]\nthree\n")
    assert done.returncode == 1
    assert done.stdout == "You said: one\n"
    assert "Error: turn failed: quota gone" in done.stderr


def test_questions_nobody_can_answer_are_declined_on_stderr(home: Path, work: Path) -> None:
    lines = 'x [[tool terminal {"command": "echo hermes-guard-test"}]]\ny [[secret MY_TOKEN]]\n'
    done = chat(home, work, lines)
    assert done.returncode == 0, done.stderr
    assert "approval needed for: echo hermes-guard-test — no terminal to answer it" in done.stderr
    assert "denied: echo hermes-guard-test" in done.stderr
    assert "The user declined this tool call" in done.stdout
    assert "a secret was asked for (MY_TOKEN)" in done.stderr
    assert "MY_TOKEN: skipped" in done.stderr


def test_continue_resumes_the_latest_conversation_of_this_folder(home: Path, tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    assert chat(home, alpha, "first in alpha\n").returncode == 0
    assert chat(home, beta, "first in beta\n").returncode == 0  # the most recent overall
    done = chat(home, alpha, "second\n", "--continue", "--model", "mock:history")
    assert done.returncode == 0, done.stderr
    assert "resumed session" in done.stderr
    assert done.stdout.splitlines()[-1] == "Turns: first in alpha | second"
    fresh = chat(home, tmp_path, "hi\n", "--continue")  # nothing here yet: a new session
    assert fresh.returncode == 0 and fresh.stdout == "You said: hi\n", fresh.stderr
    assert "No earlier conversation in this folder; starting a new one." in fresh.stderr


def test_resume_takes_an_id_or_a_title_and_refuses_an_unknown_one(home: Path, work: Path) -> None:
    assert chat(home, work, "remember the number 7\n").returncode == 0
    done = chat(home, work, "and now?\n", "--resume", "remember the number 7", "--model", "mock:history")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "Turns: remember the number 7 | and now?"
    missing = chat(home, work, "x\n", "--resume", "no such conversation")
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == "Error: session not found"
    both = chat(home, work, "", "--resume", "x", "--continue")
    assert both.returncode == 2 and "--resume and --continue cannot be used together" in both.stderr


def test_an_unknown_model_is_refused_with_the_reason(home: Path, work: Path) -> None:
    done = chat(home, work, "hi\n", "--model", "mock:nonesuch")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Error: " in done.stderr and "mock:nonesuch" in done.stderr


def test_the_chat_process_never_loads_a_kernel_module(home: Path, work: Path) -> None:
    """The client speaks the protocol only: the kernel runs in the gateway process."""
    code = (
        "import json, sys\n"
        "from hermes_launcher import main\n"
        "code = main(['chat'])\n"
        "kernel = ('hermes_core.', 'hermes_tui_gateway', 'hermes_mock')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(kernel))\n"
        "sys.stderr.write('LOADED ' + json.dumps(loaded) + '\\n')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input="hello\n",
        env=hermes_env(home),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello\n"
    loaded = json.loads(done.stderr.split("LOADED ", 1)[1])
    assert loaded == [], f"hermes chat imported kernel or plugin modules: {loaded}"


def test_the_gateway_is_started_before_click_is_even_loaded(home: Path, work: Path) -> None:
    """Start-up budget: the gateway's own start (most of the wait) overlaps with the chat's, so
    it is spawned before click, and before the CLI's paths module (and dataclasses, with
    inspect and ast, that it imports)."""
    code = (
        "import sys\n"
        "import hermes_chat.spawn as spawn\n"
        "real = spawn.spawn_gateway\n"
        "def spy(*args, **kwargs):\n"
        "    early = sorted({'click', 'dataclasses', 'hermes_cli.paths'} & set(sys.modules))\n"
        "    sys.stderr.write(f'SPAWNED after={early}\\n')\n"
        "    return real(*args, **kwargs)\n"
        "spawn.spawn_gateway = spy\n"
        "from hermes_launcher import main\n"
        "sys.exit(main(['chat']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input="hello\n",
        env=hermes_env(home),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello\n"
    assert done.stderr.count("SPAWNED") == 1, done.stderr
    assert "SPAWNED after=[]" in done.stderr


def _working_in(folder: Path) -> list[int]:
    """Return the processes whose current directory is ``folder``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(os.readlink(f"/proc/{entry}/cwd")) == folder:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_a_usage_error_leaves_no_gateway_behind(home: Path, work: Path) -> None:
    done = chat(home, work, "", "--resume", "x", "--continue")
    assert done.returncode == 2
    assert "--resume and --continue cannot be used together" in done.stderr
    eventually_sync(lambda: not _working_in(work), timeout=20, what="no gateway left in the folder")


def test_the_frame_log_times_frames_by_shape_and_keeps_their_contents_out(
    home: Path, work: Path, tmp_path: Path
) -> None:
    log = tmp_path / "frames.log"
    done = subprocess.run(
        [HERMES, "chat"],
        input="remember hermes-frame-log-canary\n",
        env=hermes_env(home, {"HERMES_CHAT_FRAME_LOG": str(log)}),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: remember hermes-frame-log-canary\n"  # nothing else on stdout
    text = log.read_text(encoding="utf-8")
    assert "< event gateway.ready" in text
    assert "> request session.create id=" in text and "< result id=" in text
    assert "> request prompt.submit id=" in text and "< event message.complete" in text
    assert "canary" not in text
