"""Compare the ``hermes tui`` start-up of installs, spawn by spawn, on a shared machine.

``hermes chat`` waits for its gateway's answer to ``session.create`` (docs/chat.md#budgets), and
that answer is mostly the gateway's own CPU time. Each round spawns the gateway of every install
once, in turn, exactly as the chat does (``python -c <launcher> tui`` on stdio, a fresh
``HERMES_HOME`` on ``mock:echo`` with in-memory storage), sends ``session.create`` as soon as
``gateway.ready`` arrives, and records the CPU time of all the gateway's threads (``/proc``
schedstat, nanoseconds) at ``gateway.ready`` and at the answer, and the wall time to the answer.
Load from other processes changes CPU time far less than wall time, and alternating spreads what
it does change over every install alike.

Run: ``.venv/bin/python bench/tui_startup_pair.py --rounds 12 main=/tmp/main/.venv/bin/python
new=.venv/bin/python``; each install is the Python of a virtual environment with this project
installed. Prints medians and minimums in milliseconds and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# What hermes_chat.spawn runs.
LAUNCH = "import sys\nfrom hermes_launcher import main\nsys.exit(main())\n"
CONFIG = """model = "mock:echo"
[storage]
backend = "memory"
[compression]
auto_threshold = 0
[titles]
refine = false
"""


def cpu_ms(pid: int) -> float:
    """Return the CPU time every thread of ``pid`` has used so far, in milliseconds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e6


def spawn_once(python: str, home: Path) -> tuple[float, float, float]:
    """Start one gateway and open a session; return (CPU at ready, CPU at answer, wall to answer)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "HERMES_HOME": str(home)}
    env["LANG"] = "C.UTF-8"
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session.create",
        "params": {"cols": 100, "cwd": str(home)},
    }
    with open(home / "gateway.log", "ab") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [python, "-c", LAUNCH, "tui"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            cwd=home,
        )
    assert proc.stdin is not None and proc.stdout is not None
    at_ready = None
    try:
        for line in proc.stdout:
            frame = json.loads(line)
            if at_ready is None and frame.get("params", {}).get("type") == "gateway.ready":
                at_ready = cpu_ms(proc.pid)
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
            elif frame.get("id") == 1:
                wall = (time.perf_counter() - started) * 1000
                if "result" not in frame or at_ready is None:
                    raise SystemExit(f"{python}: session.create failed: {frame}")
                return at_ready, cpu_ms(proc.pid), wall
        raise SystemExit(f"{python}: the gateway ended early; see {home / 'gateway.log'}")
    finally:
        proc.stdin.close()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=12, help="spawns of each install")
    parser.add_argument("installs", nargs="+", metavar="NAME=PYTHON")
    args = parser.parse_args()
    installs = dict(item.split("=", 1) for item in args.installs)
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in installs}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.toml").write_text(CONFIG, encoding="utf-8")
        for python in installs.values():
            spawn_once(python, home)  # warm-up: bytecode, the entry-point cache
        for _ in range(args.rounds):
            for name, python in installs.items():
                figures[name].append(spawn_once(python, home))
    load_after = os.getloadavg()[0]
    print(f"{'install':<12} {'CPU at ready':>14} {'CPU at answer':>14} {'(min)':>8} {'wall to answer':>15}")
    for name, rows in figures.items():
        ready, answer, wall = (statistics.median(column) for column in zip(*rows, strict=True))
        low = min(row[1] for row in rows)
        print(f"{name:<12} {ready:>11.1f} ms {answer:>11.1f} ms {low:>5.1f} ms {wall:>12.0f} ms")
    print(
        f"medians of {args.rounds} spawns each; load average (1 min) {load_before:.2f} / {load_after:.2f}",
        end="",
    )
    print(f" on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
