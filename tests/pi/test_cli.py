"""``hermes pi``'s command line and shutdown (docs/reference/pi.md#command-line, #shutdown)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.pi.client import HERMES_PI, PiProcess, pi_env
from tests.timing import scaled


def run(home: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HERMES_PI, *args],
        env=pi_env(home),
        cwd=str(workspace),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )


def test_version_prints_the_pi_release_it_speaks(home: Path, workspace: Path) -> None:
    done = run(home, workspace, "--version")
    assert (done.returncode, done.stdout) == (0, "1.6.0\n")


def test_model_flags(spawn: Callable[..., PiProcess]) -> None:
    assert spawn("--provider", "mock", "--model", "alt").call("get_state")["model"]["id"] == "alt"
    state = spawn("--model", "mock/history:high", "--name", "named").call("get_state")
    assert (state["model"]["id"], state["thinkingLevel"], state["sessionName"]) == (
        "history",
        "high",
        "named",
    )
    assert (
        spawn("--model", "mock:alt", "--thinking", "low", "--no-themes").call("get_state")["thinkingLevel"]
        == "low"
    )


def test_bad_flags_exit_1_with_one_line(home: Path, workspace: Path) -> None:
    done = run(home, workspace, "--mode", "rpc", "--provider", "mock")
    assert done.returncode == 1 and "--provider requires --model" in done.stderr and done.stdout == ""
    done = run(home, workspace, "--mode", "rpc", "--model", "mock:nope")
    assert done.returncode == 1 and "nope" in done.stderr and done.stdout == ""
    done = run(home, workspace, "--mode", "rpc", "--session", "no-such-id")
    assert done.returncode == 1 and "No session found matching 'no-such-id'" in done.stderr
    assert run(home, workspace, "--mode", "json").returncode == 2


def test_no_session_stores_nothing(spawn: Callable[..., PiProcess], home: Path) -> None:
    pi = spawn("--no-session")
    pi.prompt_and_wait("forget me")
    state = pi.call("get_state")
    assert "sessionFile" not in state and state["messageCount"] == 2
    pi.close()
    assert not (home / "pi-sessions").exists()
    listed = subprocess.run(
        [str(Path(HERMES_PI).with_name("hermes")), "sessions"],
        env=pi_env(home),
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert state["sessionId"] not in listed.stdout


def test_session_dir_and_resume_by_id(spawn: Callable[..., PiProcess], tmp_path: Path) -> None:
    first = spawn("--session-dir", str(tmp_path / "sessions"))
    first.prompt_and_wait("remember")
    state = first.call("get_state")
    first.close()
    assert state["sessionFile"] == str(tmp_path / "sessions" / f"{state['sessionId']}.jsonl")
    header = Path(state["sessionFile"]).read_text().splitlines()
    assert len(header) == 1 and '"type": "session"' in header[0] and state["sessionId"] in header[0]
    again = spawn("--session", state["sessionId"])
    assert again.call("get_state")["messageCount"] == 2


def test_a_session_another_process_holds_is_refused(
    spawn: Callable[..., PiProcess], home: Path, workspace: Path
) -> None:
    holder = spawn()
    holder.prompt_and_wait("mine")
    state = holder.call("get_state")
    done = run(home, workspace, "--mode", "rpc", "--session", state["sessionFile"])
    assert done.returncode == 1 and "open in another Hermes process" in done.stderr


def _stream(pi: PiProcess) -> int:
    start = pi.mark()
    pi.call("prompt", message="long [[tokens 5000]] [[delay 20]]")
    pi.wait_type("message_update", 1, start)
    return start


def test_eof_aborts_the_run_and_exits_0(pi: PiProcess) -> None:
    start = _stream(pi)
    pi.close_stdin()
    assert pi.wait_exit() == 0
    assert pi.of_type("agent_settled", start) == [{"type": "agent_settled", "aborted": True}]


def test_sigterm_exits_143_and_sighup_129_after_an_orderly_shutdown(spawn: Callable[..., PiProcess]) -> None:
    for sig, code in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        pi = spawn()
        start = _stream(pi)
        pi.proc.send_signal(sig)
        assert pi.wait_exit() == code
        assert pi.of_type("agent_settled", start) == [{"type": "agent_settled", "aborted": True}]
        assert "Traceback" not in pi.stderr()
