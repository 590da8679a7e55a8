"""The terminal tool with real subprocesses: output, streaming, timeouts, cancel, fds and sudo."""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tools_testkit import FakeToolContext, call, process_alive

from hermes_core import ToolResult, ToolSpec
from tests.timing import eventually_sync, scaled


@pytest.fixture
def run(specs: dict[str, ToolSpec], ctx: FakeToolContext) -> Callable[..., ToolResult]:
    """Return a runner of terminal commands in the default context."""

    def runner(command: str, **extra: Any) -> ToolResult:
        return call(specs["terminal"], {"command": command, **extra}, ctx)

    return runner


def _wait_dead(pid: int, within: float = 3.0) -> bool:
    return eventually_sync(lambda: not process_alive(pid), timeout=within, what=f"{pid} to end")


def test_exit_code_and_merged_output(run: Callable[..., ToolResult], ctx: FakeToolContext) -> None:
    result = run("echo out; echo err >&2; exit 3")
    assert result.is_error
    assert result.text == "out\nerr\n[exit code 3]"
    ok = run("pwd")
    assert not ok.is_error
    assert ok.text == f"{ctx.cwd}\n[exit code 0]"
    assert ctx.registered and ctx.registered[0][1] is False
    assert ctx.unregistered == [proc for proc, _ in ctx.registered]


def test_no_output_is_said(run: Callable[..., ToolResult]) -> None:
    assert run("true").text == "(no output)\n[exit code 0]"


def test_output_streams_before_the_end(run: Callable[..., ToolResult], ctx: FakeToolContext) -> None:
    result = run("echo a; sleep 0.4; echo b")
    finished = time.monotonic()
    assert ctx.progress_text == "a\nb\n"
    first_time, first_chunk = ctx.chunks[0]
    assert first_chunk == "a\n"
    assert finished - first_time >= 0.3
    assert result.text == "a\nb\n[exit code 0]"


def test_timeout_kills_the_whole_group(run: Callable[..., ToolResult]) -> None:
    started = time.monotonic()
    result = run("sleep 30 & echo child=$!; wait", timeout_s=0.5)
    assert time.monotonic() - started < scaled(3)
    assert result.is_error
    assert "timed out after 0.5 s" in result.text
    child = int(result.text.split("child=", 1)[1].split()[0])
    assert _wait_dead(child)


def test_a_child_left_running_does_not_hold_the_result(run: Callable[..., ToolResult]) -> None:
    started = time.monotonic()
    result = run("sleep 30 & echo child=$!")
    assert time.monotonic() - started < scaled(2)
    child = int(result.text.split("child=", 1)[1].split()[0])
    try:
        assert result.text.endswith("[exit code 0]")
    finally:
        os.kill(child, signal.SIGKILL)


def test_cancel_escalates_to_sigkill_after_the_grace(
    specs: dict[str, ToolSpec], make_ctx: Callable[..., FakeToolContext]
) -> None:
    ctx = make_ctx(settings={"kill_grace_s": 0.3})
    outcome: list[ToolResult] = []
    worker = threading.Thread(
        target=lambda: outcome.append(
            call(specs["terminal"], {"command": "trap '' TERM; echo ready; sleep 30"}, ctx)
        )
    )
    worker.start()
    eventually_sync(lambda: "ready" in ctx.progress_text, timeout=5, what="the command to be ready")
    cancelled_at = time.monotonic()
    ctx.cancelled.set()
    worker.join(5)
    elapsed = time.monotonic() - cancelled_at
    assert not worker.is_alive()
    assert 0.25 <= elapsed <= 0.3 + scaled(0.5)
    (result,) = outcome
    assert result.is_error
    assert "interrupted" in result.text
    assert result.text.startswith("ready\n")
    proc = ctx.registered[0][0]
    assert proc.returncode == -signal.SIGKILL


def test_cancel_of_a_polite_command_is_quick(
    specs: dict[str, ToolSpec], make_ctx: Callable[..., FakeToolContext]
) -> None:
    ctx = make_ctx(settings={"kill_grace_s": 5})
    timer = threading.Timer(0.2, ctx.cancelled.set)
    timer.start()
    started = time.monotonic()
    result = call(specs["terminal"], {"command": "sleep 30"}, ctx)
    assert time.monotonic() - started < scaled(2)  # SIGTERM was enough; the 5 s grace was not waited out
    assert "interrupted" in result.text


def test_stdin_is_devnull(run: Callable[..., ToolResult]) -> None:
    started = time.monotonic()
    result = run("cat; echo done", timeout_s=5)
    assert time.monotonic() - started < scaled(2)
    assert result.text == "done\n[exit code 0]"


def test_invalid_utf8_is_replaced(run: Callable[..., ToolResult]) -> None:
    assert run(r"printf 'a\377b\n'").text == "a\ufffdb\n[exit code 0]"


def test_multibyte_split_across_reads_survives(run: Callable[..., ToolResult]) -> None:
    # "é" is two bytes; the sleep makes the reads land between them.
    result = run(r"printf '\303'; sleep 0.2; printf '\251\n'")
    assert result.text == "é\n[exit code 0]"


@pytest.fixture
def inheritable_fd(tmp_path: Path) -> Iterator[int]:
    """Open a file as inheritable fd 63 in this process."""
    source = os.open(tmp_path / "leak.txt", os.O_CREAT | os.O_RDWR)
    fd = os.dup2(source, 63, inheritable=True)
    os.close(source)
    yield fd
    os.close(fd)


def test_close_fds_hides_parent_descriptors(run: Callable[..., ToolResult], inheritable_fd: int) -> None:
    result = run("ls /proc/self/fd")
    visible = result.text.splitlines()[:-1]
    assert "0" in visible and "1" in visible
    assert str(inheritable_fd) not in visible


def test_output_cap_keeps_head_and_tail(
    specs: dict[str, ToolSpec], make_ctx: Callable[..., FakeToolContext]
) -> None:
    ctx = make_ctx(settings={"output_cap_chars": 500})
    result = call(specs["terminal"], {"command": "seq 1 20000"}, ctx)
    assert result.text.startswith("1\n2\n3\n")
    assert result.text.endswith("19999\n20000\n[exit code 0]")
    assert "characters cut]" in result.text
    assert len(result.text) <= 500 + len("\n[exit code 0]")
    assert len(ctx.progress_text) == len("".join(f"{n}\n" for n in range(1, 20001)))


def test_background_returns_at_once_and_registers(
    run: Callable[..., ToolResult], ctx: FakeToolContext, workspace: Path
) -> None:
    started = time.monotonic()
    result = run("echo started > bg.txt; exec sleep 30", background=True)
    assert time.monotonic() - started < scaled(1)
    assert not result.is_error
    ((proc, background),) = ctx.registered
    assert background is True
    assert f"pid {proc.pid}" in result.text
    try:
        eventually_sync(lambda: (workspace / "bg.txt").exists(), timeout=3, what="bg.txt")
        assert (workspace / "bg.txt").read_text() == "started\n"
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log = Path(result.text.rsplit(" ", 1)[1])
    assert log.exists()
    log.unlink()


def test_working_directory_is_ctx_cwd(run: Callable[..., ToolResult], workspace: Path) -> None:
    run("touch made-here")
    assert (workspace / "made-here").exists()


FAKE_SUDO = """#!/bin/sh
# A stand-in for sudo: "-n" fails unless passwordless; "-S" wants the password on stdin.
if [ "$1" = "-n" ]; then
  {passwordless}
fi
if [ "$1" = "-S" ]; then
  shift
  read -r pw
  if [ "$pw" != "hunter2" ]; then echo "fake sudo: wrong password" >&2; exit 1; fi
  exec "$@"
fi
exec "$@"
"""


def _install_sudo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, passwordless: bool) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sudo"
    body = 'shift; exec "$@"' if passwordless else "exit 1"
    script.write_text(FAKE_SUDO.replace("{passwordless}", body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_sudo_without_an_answer_runs_nothing(
    run: Callable[..., ToolResult],
    ctx: FakeToolContext,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install_sudo(tmp_path, monkeypatch, passwordless=False)
    result = run("sudo touch marker")
    assert result.is_error
    assert "sudo needs a password" in result.text
    assert ctx.questions == [("sudo", {"command": "sudo touch marker"})]
    assert not (workspace / "marker").exists()
    assert ctx.registered == []


def test_sudo_with_the_password_runs_the_command(
    specs: dict[str, ToolSpec],
    make_ctx: Callable[..., FakeToolContext],
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install_sudo(tmp_path, monkeypatch, passwordless=False)
    ctx = make_ctx(answers=["hunter2"])
    result = call(specs["terminal"], {"command": "sudo touch marker"}, ctx)
    assert result.text == "(no output)\n[exit code 0]"
    assert (workspace / "marker").exists()
    assert "hunter2" not in result.text and "hunter2" not in ctx.progress_text

    wrong = make_ctx(answers=["letmein"])
    result = call(specs["terminal"], {"command": "sudo touch other"}, wrong)
    assert result.is_error
    assert "wrong password" in result.text
    assert not (workspace / "other").exists()


def test_passwordless_sudo_asks_nothing(
    run: Callable[..., ToolResult],
    ctx: FakeToolContext,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install_sudo(tmp_path, monkeypatch, passwordless=True)
    result = run("sudo touch marker")
    assert result.text == "(no output)\n[exit code 0]"
    assert ctx.questions == []
    assert (workspace / "marker").exists()


def test_blank_command_and_bad_timeout_are_tool_errors(run: Callable[..., ToolResult]) -> None:
    from hermes_core import ToolError

    with pytest.raises(ToolError):
        run("   ")
    with pytest.raises(ToolError, match="timeout_s"):
        run("true", timeout_s=0)
