"""The ``terminal`` tool: run a shell command, streaming its output
(docs/reference/core.md#tools, #questions).

Each command runs under ``/bin/sh -c`` in the session's cwd, in its own process group, with no
inherited file descriptors, stdin from ``/dev/null`` and stderr merged into stdout. Output is
decoded as UTF-8 with replacement and reported through ``ctx.progress`` as it arrives. On timeout
or interrupt the whole process group gets SIGTERM, then SIGKILL after the grace period.

A command starting with ``sudo`` first tries ``sudo -n true``; when that fails the user is asked
for the password, which is written to the command's stdin (``sudo -S``) and then wiped.
"""

from __future__ import annotations

import codecs
import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from hermes_core import ToolContext, ToolError, ToolResult
from hermes_tools.common import BoundedOutput, bool_arg, output_cap, str_arg

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_GRACE_S = 0.5
POLL_S = 0.05
READ_BYTES = 65536
# After the shell exits, a child it left running may still hold the output pipe open; read what
# is already there for this long and then stop waiting for the pipe to close.
DRAIN_AFTER_EXIT_S = 0.5
SUDO_CHECK_TIMEOUT_S = 10.0

_SUDO_PREFIX = re.compile(r"\s*sudo(?=\s|$)")


def _settings_float(ctx: ToolContext, key: str, default: float) -> float:
    value = ctx.settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return default
    return float(value)


def _timeout(args: dict[str, Any], ctx: ToolContext) -> float:
    value = args.get("timeout_s")
    if value is None:
        return _settings_float(ctx, "terminal_timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ToolError("'timeout_s' must be a positive number of seconds")
    return float(value)


def _spawn(command: str, ctx: ToolContext, *, stdin: int, stdout: int) -> subprocess.Popen[bytes]:
    try:
        # env is not passed: the child inherits the process environment as hermes_cli set it up.
        return subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=ctx.cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot start the command in {ctx.cwd}: {exc.strerror or exc}") from None


def _group_has_live_member(pgid: int) -> bool | None:
    """Scan ``/proc`` for a non-zombie member of the group; None where there is no ``/proc``."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # Fields after the command name (which may hold spaces): state, ppid, pgrp, ...
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member we may not signal (e.g. a root sudo) still exists
    # Orphaned members that died stay zombies until init reaps them, which can take a while
    # in containers; they do not need the rest of the grace period.
    live = _group_has_live_member(pgid)
    return True if live is None else live


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen[Any], grace: float) -> None:
    """Stop a process started in its own group: SIGTERM, wait ``grace``, then SIGKILL.

    :param proc: the group leader.
    :param grace: seconds the group gets to exit after SIGTERM.
    """
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader so a zombie does not keep the group alive
        if not _group_alive(pgid):
            break
        time.sleep(0.02)
    _signal_group(pgid, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _sudo_is_passwordless(ctx: ToolContext) -> bool:
    try:
        check = subprocess.run(
            ["sudo", "-n", "true"],
            cwd=ctx.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            timeout=SUDO_CHECK_TIMEOUT_S,
        )
    except FileNotFoundError:
        return True  # no sudo at all: run as is and let the shell say so
    except (OSError, subprocess.TimeoutExpired):
        return False
    return check.returncode == 0


def _prepare_sudo(command: str, ctx: ToolContext) -> tuple[str, bytearray | None] | None:
    """Return the command to run and the password bytes to feed it, or None for no answer."""
    if _sudo_is_passwordless(ctx):
        return command, None
    answer = ctx.ask("sudo", command=command)
    if not answer:
        return None
    password = bytearray(answer.encode("utf-8"))
    password += b"\n"
    del answer
    match = _SUDO_PREFIX.match(command)
    assert match is not None  # the caller checked the prefix
    return command[: match.end()] + " -S" + command[match.end() :], password


def _feed_password(proc: subprocess.Popen[bytes], password: bytearray) -> None:
    stdin = proc.stdin
    assert stdin is not None
    try:
        # os.write on the raw fd keeps the password out of Python's buffered writer.
        os.write(stdin.fileno(), password)
    except (BrokenPipeError, OSError):
        pass  # the command exited without reading it
    finally:
        password[:] = bytes(len(password))
        try:
            stdin.close()
        except OSError:
            pass


def _pump(proc: subprocess.Popen[bytes], ctx: ToolContext, timeout: float, output: BoundedOutput) -> str:
    """Stream the command's output until it ends; return ``exited``, ``timeout`` or ``cancelled``."""
    stdout: IO[bytes] | None = proc.stdout
    assert stdout is not None
    fd = stdout.fileno()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    reading = True

    def emit(text: str) -> None:
        if text:
            output.add(text)
            ctx.progress(text)

    state = "exited"
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if ctx.cancelled.is_set():
                state = "cancelled"
                break
            now = time.monotonic()
            if now >= deadline:
                state = "timeout"
                break
            wait = min(POLL_S, deadline - now)
            if not reading:
                if proc.poll() is not None:
                    break
                ctx.cancelled.wait(wait)
                continue
            if selector.select(wait):
                data = os.read(fd, READ_BYTES)
                if data:
                    emit(decoder.decode(data))
                else:
                    reading = False
                    selector.unregister(fd)
                    continue
            if proc.poll() is not None:
                exited_at = exited_at if exited_at is not None else now
                if now - exited_at >= DRAIN_AFTER_EXIT_S:
                    break
    emit(decoder.decode(b"", final=True))
    return state


def _exit_note(code: int) -> str:
    if code >= 0:
        return f"[exit code {code}]"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"[killed by {name} (exit code {code})]"


def _with_note(output: BoundedOutput, note: str) -> str:
    text = output.text()
    if not text:
        return f"(no output)\n{note}"
    return text + ("" if text.endswith("\n") else "\n") + note


def _run_foreground(command: str, password: bytearray | None, timeout: float, ctx: ToolContext) -> ToolResult:
    grace = _settings_float(ctx, "kill_grace_s", DEFAULT_GRACE_S)
    proc = _spawn(
        command,
        ctx,
        stdin=subprocess.PIPE if password is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    ctx.register_process(proc)
    try:
        if password is not None:
            _feed_password(proc, password)
        output = BoundedOutput(output_cap(ctx))
        state = _pump(proc, ctx, timeout, output)
        if state == "cancelled":
            kill_group(proc, grace)
            return ToolResult(
                text=_with_note(output, "[interrupted: the command was stopped]"), is_error=True
            )
        if state == "timeout":
            kill_group(proc, grace)
            note = f"[timed out after {timeout:g} s; the command was killed]"
            return ToolResult(text=_with_note(output, note), is_error=True)
        code = proc.wait()
        return ToolResult(text=_with_note(output, _exit_note(code)), is_error=code != 0)
    finally:
        if proc.poll() is None:  # only after an unexpected error
            kill_group(proc, grace)
        if proc.stdout is not None:
            proc.stdout.close()
        ctx.unregister_process(proc)


def _start_background(command: str, password: bytearray | None, ctx: ToolContext) -> ToolResult:
    log_dir = ctx.settings.get("background_log_dir") or tempfile.gettempdir()
    handle, log_name = tempfile.mkstemp(prefix="hermes-bg-", suffix=".log", dir=Path(log_dir))
    try:
        proc = _spawn(
            command, ctx, stdin=subprocess.PIPE if password is not None else subprocess.DEVNULL, stdout=handle
        )
    finally:
        os.close(handle)
    ctx.register_process(proc, background=True)
    if password is not None:
        _feed_password(proc, password)
    return ToolResult(text=f"Started in the background with pid {proc.pid}; its output goes to {log_name}")


def terminal(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run a shell command and return its output and exit code.

    :param args: ``command``, optional ``timeout_s`` and ``background``.
    :param ctx: the running tool's context.
    :returns: the (capped) output followed by the exit code, or a start notice in the background.
    """
    command = str_arg(args, "command")
    if not command.strip():
        raise ToolError("'command' must not be blank")
    timeout = _timeout(args, ctx)
    background = bool_arg(args, "background")
    if ctx.cancelled.is_set():
        return ToolResult(text="interrupted before the command started", is_error=True)
    password: bytearray | None = None
    if _SUDO_PREFIX.match(command):
        prepared = _prepare_sudo(command, ctx)
        if ctx.cancelled.is_set():
            return ToolResult(text="interrupted before the command started", is_error=True)
        if prepared is None:
            return ToolResult(text="sudo needs a password; nothing was run", is_error=True)
        command, password = prepared
    if background:
        return _start_background(command, password, ctx)
    return _run_foreground(command, password, timeout, ctx)
