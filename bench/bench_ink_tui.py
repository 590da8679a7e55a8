"""Upstream's Ink TUI on ``hermes tui``: start-up and keystroke echo against the budgets of issue 21.

Conditions: the real bundle (``hermes_cli/tui_dist/entry.js`` from the ``hermes-agent`` 0.19.0
wheel, fetched into ``.ci/ink-tui`` like the tests do), a 120x45 tmux terminal, a fresh
``HERMES_HOME`` with ``mock:echo`` and SQLite storage. Times are taken from outside, the way a
user sees them: ``tmux capture-pane`` is polled (a poll costs a few milliseconds, which every
figure includes). Run: ``.venv/bin/python bench/bench_ink_tui.py [--runs N] [--upstream-venv DIR]``.

* ``hermes --tui`` → ready: from starting ``hermes --tui`` to the prompt with a live session
  (session panel and "ready" in the status bar).
* ``hermes --tui`` → first reply: from the start to the reply of a prompt typed the moment it
  is ready ("first prompt accepted").
* upstream ``hermes --tui`` → ready: the same for upstream's own ``hermes --tui`` from its own
  venv (``--upstream-venv``, default ``.ci/ink-tui/.venv-upstream``: ``python -m venv`` there and
  ``pip install hermes-agent==0.19.0``; never this project's venv). It is given a dummy
  OpenRouter key so it creates a session instead of asking for setup; no prompt is sent to it.
* keystroke echo: one character typed at a time while a ``[[tokens 20000]]`` reply streams;
  from ``send-keys`` to the character showing in the input line.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.tui.client import write_config  # noqa: E402
from tests.tui.ink import bundle  # noqa: E402
from tests.tui.ink.screen import InkTui  # noqa: E402

BUDGET_START_S = 1.5
BUDGET_ECHO_P95_MS = 100.0
CONFIG = 'model = "mock:echo"\n[compression]\nauto_threshold = 0\n[titles]\nrefine = false\n'


def _ready(screen: str) -> bool:
    return "Session:" in screen and "─ ready" in screen


def _poll(tui: InkTui, check, limit: float) -> float:
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        if check(tui.text()):
            return time.perf_counter()
        time.sleep(0.005)
    raise TimeoutError("the TUI did not get there in time:\n" + tui.text())


def ours_start(root: Path) -> tuple[float, float]:
    """Return (seconds to ready, seconds to the first reply) for ``hermes --tui``."""
    home, work = root / "home", root / "work"
    work.mkdir(parents=True)
    write_config(home, CONFIG)
    # Warm the launcher and bytecode once, as an installed copy would be.
    tui = InkTui(home, work, via_hermes=True)
    try:
        _poll(tui, _ready, 60)
    finally:
        tui.close()
        tui.remove()
    start = time.perf_counter()
    tui = InkTui(home, work, via_hermes=True)
    try:
        ready = _poll(tui, _ready, 60) - start
        tui.type("hi")
        # Enter in the same read as the text is taken for pasted text, so wait for the echo.
        _poll(tui, lambda _s: tui.composer() == "hi", 10)
        tui.keys("Enter")
        reply = _poll(tui, lambda s: "You said: hi" in s, 60) - start
        return ready, reply
    finally:
        tui.close()
        tui.remove()


class _Upstream:
    """Upstream's own ``hermes --tui`` in tmux (its own venv and home)."""

    def __init__(self, hermes: Path, root: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ink-up-", dir="/tmp"))
        self.socket = self.dir / "s"
        home = root / "up-home"
        work = root / "up-work"
        home.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "OPENROUTER_"))}
        env.pop("PYTHONPATH", None)
        env.update(HERMES_HOME=str(home), OPENROUTER_API_KEY="sk-or-dummy-bench", TERM="xterm-256color")
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
        script = self.dir / "run.sh"
        run = f"cd {shlex.quote(str(work))}\nexec {shlex.quote(str(hermes))} --tui 2>/dev/null\n"
        script.write_text(f"#!/bin/sh\n{exports}{run}", encoding="utf-8")
        script.chmod(0o700)
        self.start = time.perf_counter()
        self._tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "45", str(script))

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            [bundle.tmux(), "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30
        ).stdout

    def text(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "0")

    def close(self) -> None:
        panes = self._tmux("list-panes", "-a", "-F", "#{pane_pid}").split()
        self._tmux("kill-server")
        for pid in panes:
            for _ in range(200):
                try:
                    os.kill(int(pid), 0)
                except OSError:
                    break
                time.sleep(0.05)
        shutil.rmtree(self.dir, ignore_errors=True)


def upstream_start(hermes: Path, root: Path) -> float:
    """Return seconds from upstream's ``hermes --tui`` to its ready prompt with a session."""
    warm = _Upstream(hermes, root)
    try:
        _poll(warm, _ready, 120)  # type: ignore[arg-type]
    finally:
        warm.close()
    tui = _Upstream(hermes, root)
    try:
        return _poll(tui, _ready, 120) - tui.start  # type: ignore[arg-type]
    finally:
        tui.close()


def echo_latencies(root: Path, streaming: bool, count: int = 40) -> tuple[list[float], bool]:
    """Type ``count`` characters one at a time; return the echo latencies (ms) and whether the
    reply was still streaming after the last one."""
    home, work = root / "home", root / "work"
    work.mkdir(parents=True, exist_ok=True)
    write_config(home, CONFIG)
    tui = InkTui(home, work)
    try:
        _poll(tui, _ready, 60)
        if streaming:
            tui.type("go [[tokens 20000]] [[delay 1]]")
            _poll(tui, lambda _s: tui.composer().endswith("[[delay 1]]"), 10)
            tui.keys("Enter")
            _poll(tui, lambda s: " t200 " in s, 60)
        typed = ""
        out = []
        for i in range(count):
            char = "abcdefghijklmnopqrstuvwxyz"[i % 26]
            typed += char
            sent = time.perf_counter()
            tui.type(char)
            _poll(tui, lambda _s, want=typed: tui.composer().endswith(want), 10)
            out.append((time.perf_counter() - sent) * 1000)
        still = "─ ready" not in tui.text() if streaming else True
        return out, still
    finally:
        tui.close()
        tui.remove()


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--upstream-venv", type=Path, default=REPO / ".ci" / "ink-tui" / ".venv-upstream")
    args = parser.parse_args()
    bundle.entry_js()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ink-") as tmp:
        root = Path(tmp)
        starts = [ours_start(root / f"ours{i}") for i in range(args.runs)]
        ready = [r for r, _ in starts]
        reply = [r for _, r in starts]
        rows.append(
            (
                "hermes --tui → ready (median / max)",
                f"{statistics.median(ready):.2f} / {max(ready):.2f} s",
                f"≤ {BUDGET_START_S} s",
            )
        )
        rows.append(
            (
                "hermes --tui → first reply (median / max)",
                f"{statistics.median(reply):.2f} / {max(reply):.2f} s",
                f"≤ {BUDGET_START_S} s",
            )
        )
        upstream = args.upstream_venv / "bin" / "hermes"
        if upstream.exists():
            theirs = [upstream_start(upstream, root / f"up{i}") for i in range(args.runs)]
            rows.append(
                (
                    "upstream hermes --tui → ready (median / max)",
                    f"{statistics.median(theirs):.2f} / {max(theirs):.2f} s",
                    "ours ≤ this",
                )
            )
        else:
            rows.append(("upstream hermes --tui → ready", f"not measured: no {upstream}", "ours ≤ this"))
        idle, _ = echo_latencies(root / "idle", streaming=False)
        busy, still = echo_latencies(root / "busy", streaming=True)
        rows.append(
            ("keystroke echo, idle (p50 / p95)", f"{statistics.median(idle):.0f} / {_p95(idle):.0f} ms", "—")
        )
        rows.append(
            (
                "keystroke echo, 20k-token reply streaming (p50 / p95 / max)",
                f"{statistics.median(busy):.0f} / {_p95(busy):.0f} / {max(busy):.0f} ms"
                + ("" if still else " (reply ended early)"),
                f"p95 ≤ {BUDGET_ECHO_P95_MS:.0f} ms",
            )
        )
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement'.ljust(width)}  {'result':<32}  budget")
    for name, value, budget in rows:
        print(f"{name.ljust(width)}  {value:<32}  {budget}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
