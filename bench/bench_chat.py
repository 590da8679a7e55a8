"""Benchmarks of ``hermes chat`` in a real pseudo-terminal against issue #24's budgets; prints a table.

Conditions: the real ``hermes`` console script started on a pty of 100×32 columns, a fresh
``HERMES_HOME`` with ``mock:echo`` (in-memory storage, compaction and title refinement off), the
gateway the chat spawns itself. Run: ``.venv/bin/python bench/bench_chat.py``.

* start → input ready: from ``exec`` to the input prompt ``❯`` drawn (typed text is kept and sent
  once the session is open), and the CPU time the chat process had used by then (on a loaded
  machine the wall time grows with the load, the CPU time hardly); start → session open: the
  model shows in the toolbar (the gateway accepted ``session.create``; a prompt typed now is
  sent at once). Median and p95 over ``--starts`` cold starts.
* where start-up goes: when the chat started its gateway (``/proc`` start times, 10 ms ticks),
  and the CPU time each process had used when the session opened: on an idle machine the
  session cannot open sooner than the gateway's own CPU time after its spawn.
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
from dataclasses import dataclass
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


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    """Return the fields of ``/proc/PID/stat`` after the command name (field 3 onwards)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
        return fh.read().rsplit(")", 1)[1].split()


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

    def cpu_seconds(self, pid: int | None = None) -> float:
        fields = _stat(self.pid if pid is None else pid)
        return (int(fields[11]) + int(fields[12])) / TICK

    def gateway(self) -> int | None:
        """Return the pid of the gateway the chat spawned, once there is one."""
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if int(_stat(int(entry))[1]) == self.pid:
                        return int(entry)
                except (OSError, IndexError, ValueError):
                    continue
        return None

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


@dataclass
class Start:
    """One cold start's figures, in seconds."""

    ready: float
    opened: float
    cpu: float
    spawned: float
    chat_cpu: float
    gw_cpu: float


def start_once(root: Path) -> Start:
    home, work = root / "home", root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    (home / "config.toml").write_text(CONFIG, encoding="utf-8")
    chat = Pty(home, work)
    gateway: int | None = None
    try:
        ready = chat.wait("❯".encode()) - chat.started
        cpu = chat.cpu_seconds()  # what start-up costs on an idle machine, whatever the load now
        gateway = chat.gateway()
        opened = chat.wait(b"mock:echo") - chat.started
        chat_cpu = chat.cpu_seconds()
        gateway = gateway or chat.gateway()
        gw_cpu = chat.cpu_seconds(gateway) if gateway else float("nan")
        spawned = (int(_stat(gateway)[19]) - int(_stat(chat.pid)[19])) / TICK if gateway else float("nan")
    finally:
        chat.close()
    return Start(ready, opened, cpu, spawned, chat_cpu, gw_cpu)


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


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--starts", type=int, default=10, help="cold starts to time")
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--delay-ms", type=int, default=2, help="mock delay before each token")
    parser.add_argument("--no-stream", action="store_true", help="time the start-up only")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start_once(root)  # warm-up: the entry-point cache and the bytecode of a fresh home
        starts = [start_once(root) for _ in range(args.starts)]
        streamed = None if args.no_stream else stream(root, args.tokens, args.delay_ms)
    load_after = os.getloadavg()
    ms = 1000

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values) * ms:.0f} / {_p95(values) * ms:.0f} ms"

    def median(values: list[float]) -> str:
        return f"{statistics.median(values) * ms:.0f} ms"

    rows = [
        ("start → input ready (median / p95)", spread([s.ready for s in starts]), "—"),
        ("start → input ready: CPU time (median)", median([s.cpu for s in starts]), "—"),
        ("start → session open (median / p95)", spread([s.opened for s in starts]), "≤ 400 ms"),
        ("  gateway spawned after (median)", median([s.spawned for s in starts]), "—"),
        ("  gateway CPU at session open (median)", median([s.gw_cpu for s in starts]), "—"),
        ("  chat CPU at session open (median)", median([s.chat_cpu for s in starts]), "—"),
    ]
    if streamed is not None:
        share, wall, echoes = streamed
        echo = f"p50 {statistics.median(echoes) * ms:.1f} ms, p95 {_p95(echoes) * ms:.1f} ms"
        rows += [
            (f"streaming {args.tokens} tokens: chat CPU", f"{share:.0%} of one core, {wall:.1f} s", "≤ 50%"),
            (f"keystroke echo while streaming (n={len(echoes)})", echo, "p95 ≤ 50 ms"),
        ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'figure':<40}  budget")
    for name, figure, budget in rows:
        print(f"{name:<{width}}  {figure:<40}  {budget}")
    print(f"load average (1 min) before / after: {load_before[0]:.2f} / {load_after[0]:.2f}", end="")
    print(f" on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
