"""Time the CLI's cheap paths: ``hermes --version`` and the root ``hermes --help``.

Each command runs as a fresh subprocess (after one warm-up run) with a throwaway
``HERMES_HOME``; the table shows the median and 95th percentile wall time against the 100 ms
budget, next to a bare interpreter start for reference. Always exits 0.

Usage: ``.venv/bin/python bench/bench_cli.py [--runs N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_MS = 100.0


def _hermes() -> str:
    """Return the installed ``hermes`` script next to this interpreter."""
    bin_dir = Path(sys.executable).parent
    return shutil.which("hermes", path=str(bin_dir)) or str(bin_dir / "hermes")


def time_command(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Run ``argv`` ``runs`` times after one warm-up; return wall times in milliseconds.

    :param argv: the command line.
    :param env: the environment for each run.
    :param runs: how many timed runs.
    """
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - start) * 1000)
    return times


def percentile(values: list[float], fraction: float) -> float:
    """Return the nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


def main() -> int:
    """Run the benchmark and print the table.

    :returns: 0 always (benchmarks report, they do not gate).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs per command (default 20)")
    args = parser.parse_args()
    hermes = _hermes()
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env["HERMES_HOME"] = home
        cases = [
            ("python -c pass (reference)", [sys.executable, "-c", "pass"], False),
            ("hermes --version", [hermes, "--version"], True),
            ("hermes --help", [hermes, "--help"], True),
        ]
        rows = []
        for label, argv, budgeted in cases:
            times = time_command(argv, env, args.runs)
            median, p95 = statistics.median(times), percentile(times, 0.95)
            verdict = ("ok" if median <= BUDGET_MS else "OVER") if budgeted else "-"
            rows.append((label, median, p95, verdict))
    bytecode = "off (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"hermes CLI cheap paths: {args.runs} runs each, budget {BUDGET_MS:.0f} ms median")
    print(f"interpreter {sys.version.split()[0]}, bytecode cache writes {bytecode}, {os.cpu_count()} CPUs")
    print(f"{'command':<28} {'median ms':>10} {'p95 ms':>10}  budget")
    for label, median, p95, verdict in rows:
        print(f"{label:<28} {median:>10.1f} {p95:>10.1f}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
