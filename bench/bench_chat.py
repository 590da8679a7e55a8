"""Benchmarks of ``hermes chat`` in a real pseudo-terminal against issue #24's budgets; prints a table.

Conditions: the real ``hermes`` console script started on a pty of 100×32 columns, a fresh
``HERMES_HOME`` with ``mock:echo`` (in-memory storage, compaction and title refinement off), the
gateway the chat spawns itself. Run: ``.venv/bin/python bench/bench_chat.py``.

* start → input ready: from ``exec`` to the input prompt ``❯`` drawn (typed text is kept and sent
  once the session is open), and the CPU time the chat process had used by then (on a loaded
  machine the wall time grows with the load, the CPU time hardly); start → session open: the
  model shows in the toolbar.
* streaming CPU: the chat process's own CPU time (``/proc/PID/stat``, its gateway child not
  counted) over the wall time of a ``[[tokens 20000]]`` reply streamed at a ``[[delay MS]]``.
* keystroke echo: while that reply streams, one letter is typed every 50 ms; the time from
  writing it to the pty to reading it back from the terminal's output.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import threading
import time
from fcntl import ioctl
from pathlib import Path

HERMES = str(Path(sys.executable).with_name("hermes"))
CONFIG = """model = "mock:echo"
[storage]
backend = "memory"
[compression]
auto_threshold = 0
[titles]
refine = false
"""
# Letters that appear nowhere else on screen during the stream (tokens are t0 t1 …; the toolbar
# and notices use C, D and lower case), so the first one read after typing it is its echo.
LETTERS = "QXZJKWVYBGHMNPRSU"


class Pty:
    """``hermes chat`` on a pseudo-terminal; a thread keeps everything it writes, time-stamped."""

    def __init__(self, home: Path, work: Path) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "HERMES_HOME": str(home),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
        }
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become hermes chat
            os.chdir(work)
            os.execve(HERMES, [HERMES, "chat"], env)
        self.pid, self.fd = pid, fd
        ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 32, 100, 0, 0))
        self.out = bytearray()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.5)
                if not ready:
                    continue
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.out += data
                self.changed.notify_all()

    def size(self) -> int:
        with self.lock:
            return len(self.out)

    def wait(self, needle: bytes, start: int = 0, timeout: float = 120) -> float:
        """Wait for ``needle`` in the output after byte ``start``; return when it arrived."""
        deadline = time.perf_counter() + timeout
        with self.lock:
            while self.out.find(needle, start) < 0:
                left = deadline - time.perf_counter()
                if left <= 0:
                    tail = bytes(self.out[-2000:]).decode(errors="replace")
                    raise SystemExit(f"{needle!r} never appeared; the terminal ends with:\n{tail}")
                self.changed.wait(left)
        return time.perf_counter()

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.pid}/stat", encoding="utf-8") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def start_once(root: Path) -> tuple[float, float, float]:
    home, work = root / "home", root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    (home / "config.toml").write_text(CONFIG, encoding="utf-8")
    chat = Pty(home, work)
    try:
        ready = chat.wait("❯".encode()) - chat.started
        cpu = chat.cpu_seconds()  # what start-up costs on an idle machine, whatever the load now
        opened = chat.wait(b"mock:echo") - chat.started
    finally:
        chat.close()
    return ready, opened, cpu


def stream(root: Path, tokens: int, delay_ms: int) -> tuple[float, float, list[float]]:
    home, work = root / "home", root / "work"
    chat = Pty(home, work)
    try:
        chat.wait(b"mock:echo")
        chat.type(f"go [[tokens {tokens}]] [[delay {delay_ms}]]\r")
        chat.wait(b"t100 ")
        cpu0, wall0 = chat.cpu_seconds(), time.perf_counter()
        echoes: list[float] = []
        last = f"t{tokens - 1}".encode()
        typed = 0
        while True:
            with chat.lock:
                if chat.out.find(last) >= 0:
                    break
            if typed == len(LETTERS):
                chat.type("\x15")  # Ctrl+U: clear the input, so each letter is new on screen again
                typed = 0
                time.sleep(0.05)
                continue
            letter = LETTERS[typed]
            mark = chat.size()
            sent = time.perf_counter()
            chat.type(letter)
            echoes.append(chat.wait(letter.encode(), mark, timeout=30) - sent)
            typed += 1
            time.sleep(0.05)
        chat.wait(last, timeout=600)
        wall = time.perf_counter() - wall0
        cpu = chat.cpu_seconds() - cpu0
    finally:
        chat.close()
    return cpu / wall, wall, echoes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--starts", type=int, default=7, help="cold starts to time")
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--delay-ms", type=int, default=2, help="mock delay before each token")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        starts = [start_once(root) for _ in range(args.starts)]
        share, wall, echoes = stream(root, args.tokens, args.delay_ms)
    ready = sorted(s[0] for s in starts)
    opened = sorted(s[1] for s in starts)
    cpu = sorted(s[2] for s in starts)
    echoes.sort()
    p95 = echoes[min(len(echoes) - 1, int(len(echoes) * 0.95))]
    ms = 1000
    echo = f"p50 {statistics.median(echoes) * ms:.1f} ms, p95 {p95 * ms:.1f} ms"
    rows = [
        (
            "start → input ready (median / max)",
            f"{statistics.median(ready) * ms:.0f} / {ready[-1] * ms:.0f} ms",
            "≤ 400 ms",
        ),
        ("start → input ready: CPU time (median)", f"{statistics.median(cpu) * ms:.0f} ms", "—"),
        (
            "start → session open (median / max)",
            f"{statistics.median(opened) * ms:.0f} / {opened[-1] * ms:.0f} ms",
            "—",
        ),
        (
            f"streaming {args.tokens} tokens: chat CPU",
            f"{share * 100:.0f}% of one core, {wall:.1f} s",
            "≤ 50%",
        ),
        (f"keystroke echo while streaming (n={len(echoes)})", echo, "p95 ≤ 50 ms"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'figure':<40}  budget")
    for name, figure, budget in rows:
        print(f"{name:<{width}}  {figure:<40}  {budget}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
