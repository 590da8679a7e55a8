"""Compare the ``hermes acp`` start-up of source trees, spawn by spawn, on a shared machine.

Each round spawns every tree once, in turn, so load changes hit all of them alike. A spawn sends
``initialize`` and then ``session/new`` at once, like an editor; it records the wall time to each
reply and the CPU time the process used up to the ``session/new`` reply (all its threads, from
``/proc``), which other processes' load disturbs much less than wall time.

Run: ``.venv/bin/python bench/acp_startup_pair.py --rounds 20 old=/tmp/old-tree new=.``; a tree is
a checkout whose ``hermes_core``, ``hermes_cli`` and ``plugins`` are put first on ``PYTHONPATH``
(the installed entry points must name the same plugins). Compile the trees first
(``python -m compileall -q TREE``) when ``PYTHONDONTWRITEBYTECODE`` is set, or every spawn pays
for compiling the sources. Prints medians in milliseconds and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_acp import bytecode_note, fresh_home

CODE = "import sys; from hermes_cli.main import main; sys.argv = ['hermes', 'acp']; sys.exit(main())"


def cpu_ms(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e6


def spawn(env: dict[str, str], work: str) -> tuple[float, float, float]:
    """Return ms to the initialize reply, to the session/new reply, and CPU ms until then."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", CODE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=work,
    )
    assert process.stdin is not None and process.stdout is not None
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": work, "mcpServers": []}}
    process.stdin.write(json.dumps(init).encode() + b"\n" + json.dumps(new).encode() + b"\n")
    process.stdin.flush()
    initialized = None
    while True:
        frame = json.loads(process.stdout.readline())
        if frame.get("id") == 0:
            initialized = (time.perf_counter() - start) * 1000
        if frame.get("id") == 1:
            break
    ready = (time.perf_counter() - start) * 1000
    cpu = cpu_ms(process.pid)
    if "result" not in frame:
        raise SystemExit(f"session/new failed: {frame}")
    process.stdin.close()
    process.wait()
    return initialized or ready, ready, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("trees", nargs="+", help="NAME=PATH of a source tree")
    args = parser.parse_args()
    note = bytecode_note()
    if note:
        print(note)
    base, work, _ = fresh_home()
    envs: dict[str, dict[str, str]] = {}
    for spec in args.trees:
        name, _, path = spec.partition("=")
        tree = Path(path).resolve()
        envs[name] = {**base, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'plugins'}"}
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in envs}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for name, env in envs.items():
            results[name].append(spawn(env, work))
    load_after = os.getloadavg()[0]
    for name, rows in results.items():
        init, ready, cpu = (statistics.median(column) for column in zip(*rows, strict=True))
        print(
            f"{name:8} initialize {init:4.0f} ms  session/new {ready:4.0f} ms  "
            f"(after initialize {ready - init:4.0f})  cpu {cpu:4.0f} ms  n={len(rows)}"
        )
    print(f"load average {load_before:.2f} -> {load_after:.2f}")


if __name__ == "__main__":
    main()
