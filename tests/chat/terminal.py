"""Drive ``hermes chat`` in a real terminal: a tmux server of the test's own, read by content.

Each :class:`Terminal` runs one command in a detached tmux session on a private socket, types
into it with ``send-keys`` and reads the screen and the scrollback with ``capture-pane``. The
command runs under ``sh -c`` that prints ``EXITED <code>`` when it ends, so a test can see the
exit code on the screen. Assertions read content (``in``), never positions.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.timing import eventually_sync

TMUX = shutil.which("tmux")
EXITED = re.compile(r"EXITED (\d+)")


def require_tmux() -> str:
    """Return tmux's path, or fail saying how to get it (never a silent skip)."""
    if TMUX is None:
        raise AssertionError(
            "tmux is needed for the real-terminal tests of hermes chat: apt-get install tmux "
            "(.ci/services/tmux.sh does it in CI)"
        )
    return TMUX


class Terminal:
    """One command running in a tmux pane."""

    def __init__(
        self,
        root: Path,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        cols: int = 100,
        rows: int = 32,
    ) -> None:
        self.tmux = require_tmux()
        self.socket = root / "tmux.sock"
        self.name = "chat"
        command = " ".join(shlex.quote(a) for a in argv)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        script = f"cd {shlex.quote(str(cwd))} && env -i {exports} {command}; echo EXITED $?; sleep 3600"
        self._run(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(cols),
            "-y",
            str(rows),
            "sh",
            "-c",
            script,
        )
        self._run("set-option", "-t", self.name, "history-limit", "50000")

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-u", "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def type(self, text: str) -> None:
        """Type ``text`` literally (no key names)."""
        self._run("send-keys", "-t", self.name, "-l", "--", text)  # "--": text may start with "-"

    def keys(self, *names: str) -> None:
        """Press keys by tmux name: ``Enter``, ``Tab``, ``C-c``, ``Escape``, ``M-Enter``."""
        self._run("send-keys", "-t", self.name, *names)

    def paste(self, text: str) -> None:
        """Paste ``text`` as a terminal would (bracketed, when the program asked for it)."""
        self._run("set-buffer", "-b", "t", text)
        self._run("paste-buffer", "-p", "-d", "-b", "t", "-t", self.name)

    def screen(self) -> str:
        """Return what is visible now."""
        return self._run("capture-pane", "-p", "-t", self.name)

    def scrollback(self) -> str:
        """Return everything the pane printed: scrollback and screen, wrapped lines joined."""
        return self._run("capture-pane", "-p", "-J", "-S", "-", "-t", self.name)

    def ansi(self) -> str:
        """Return the whole pane with its colours (escape sequences), for screenshots."""
        return self._run("capture-pane", "-p", "-e", "-S", "-", "-t", self.name)

    def wait_for(self, text: str, timeout: float = 30, *, count: int = 1) -> str:
        """Wait until ``text`` appears (``count`` times) in the scrollback; return it."""
        found: list[str] = []

        def seen() -> bool:
            found[:] = [self.scrollback()]
            return found[0].count(text) >= count

        try:
            eventually_sync(seen, timeout=timeout, interval=0.1, what=repr(text))
        except AssertionError:
            raise AssertionError(
                f"{text!r} (x{count}) never appeared; the pane shows:\n{found[-1]}"
            ) from None
        return found[0]

    def wait_screen(self, text: str, timeout: float = 30) -> str:
        """Wait until ``text`` is on the visible screen (the live area, the toolbar)."""
        found: list[str] = []

        def seen() -> bool:
            found[:] = [self.screen()]
            return text in found[0]

        try:
            eventually_sync(seen, timeout=timeout, interval=0.1, what=repr(text))
        except AssertionError:
            raise AssertionError(f"{text!r} never showed; the screen is:\n{found[-1]}") from None
        return found[0]

    def exit_code(self, timeout: float = 30) -> int:
        """Wait for the command to end; return its exit code."""
        match = EXITED.search(self.wait_for("EXITED", timeout))
        assert match is not None
        return int(match.group(1))

    def pane_pid(self) -> int:
        """Return the pid of the pane's shell."""
        return int(self._run("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def close(self) -> None:
        """Stop the tmux server (and what runs in it)."""
        subprocess.run(
            [self.tmux, "-S", str(self.socket), "kill-server"], capture_output=True, timeout=30, check=False
        )


def descendants(pid: int) -> list[int]:
    """Return every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def command_line(pid: int) -> str:
    """Return a process's command line, spaces between the arguments."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def wait_gone(pid: int) -> None:
    """Wait until process ``pid`` has exited."""
    eventually_sync(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), timeout=20, interval=0.05)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
