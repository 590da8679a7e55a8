"""Benchmarks of ``hermes pi`` against its budgets (docs/reference/pi.md#start-up); prints a table.

- spawn → ``get_state`` answered (budget 150 ms): pi's hosts do this handshake for every process
  they start. Measured from ``Popen`` to the response line, with the CPU time the process had
  used by then (every thread, from ``/proc``: what the wall time would be on an idle machine),
  once with the early answer a previous start cached and once without it (a cold cache).
- tokens/s through ``message_update`` on the mock (budget 50,000): a ``[[tokens N]]`` reply, from
  the first ``text_delta`` to ``message_end``, counting the tokens the deltas carried.

Conditions: a fresh ``HERMES_HOME`` with ``mock:script``, the real ``hermes-pi`` script, plain
pipes. Start-up figures depend on bytecode caches (CONTRIBUTING.md, "Benchmarks"): compile first
and run without ``PYTHONDONTWRITEBYTECODE``. The machine's load average is printed with the
figures, since a loaded machine stretches every wall-clock number.

Run: ``.venv/bin/python bench/bench_pi.py [--spawns 20] [--tokens 100000] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_acp import bytecode_note

HERMES_PI = str(Path(sys.executable).with_name("hermes-pi"))
SPAWN_BUDGET_MS = 150
TOKENS_BUDGET = 50_000


def fresh_home() -> tuple[dict[str, str], str]:
    root = tempfile.mkdtemp(prefix="hermes-bench-pi-")
    home = os.path.join(root, "home")
    work = os.path.join(root, "work")
    os.makedirs(home)
    os.makedirs(work)
    Path(home, "config.toml").write_text('model = "mock:script"\n[titles]\nrefine = false\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "ANTHROPIC_"))}
    env.update(HERMES_HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
    return env, work


def start(env: dict[str, str], work: str) -> subprocess.Popen[bytes]:
    """Start ``hermes-pi --mode rpc`` on pipes."""
    command = [HERMES_PI, "--mode", "rpc"]
    pipe = subprocess.PIPE
    return subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=subprocess.DEVNULL, env=env, cwd=work)


def cpu_ms(pid: int) -> float:
    """Return the CPU time every thread of ``pid`` has used so far, in ms (Linux ``schedstat``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e6


def spawn_once(env: dict[str, str], work: str, cold: bool = False) -> tuple[float, float]:
    """Return (ms from spawn to the get_state response, CPU ms the process used until then)."""
    if cold:
        shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    begun = time.perf_counter()
    proc = start(env, work)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("hermes-pi exited before answering get_state")
        if b'"id":"s"' in line:
            answered = (time.perf_counter() - begun) * 1000
            used = cpu_ms(proc.pid)
            break
    proc.stdin.close()
    proc.wait()
    return answered, used


def throughput(env: dict[str, str], work: str, tokens: int, rounds: int) -> list[float]:
    """Return tokens/s of each round, all in one process."""
    proc = start(env, work)
    assert proc.stdin is not None and proc.stdout is not None
    rates = []
    for index in range(rounds):
        command = {"id": f"p{index}", "type": "prompt", "message": f"go [[tokens {tokens}]]"}
        proc.stdin.write(json.dumps(command).encode() + b"\n")
        proc.stdin.flush()
        first = None
        counted = 0
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("hermes-pi exited during the stream")
            if b'"text_delta"' in line:
                if first is None:
                    first = time.perf_counter()
                counted += len(json.loads(line)["assistantMessageEvent"]["delta"].split())
            elif line.startswith(b'{"type":"message_end"') and b'"role":"assistant"' in line:
                ended = time.perf_counter()
            elif line.startswith(b'{"type":"agent_settled"'):
                break
        assert first is not None and counted == tokens, counted
        rates.append(tokens / (ended - first))
    proc.stdin.close()
    proc.wait()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spawns", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    note = bytecode_note()
    if note:
        print(note)
    env, work = fresh_home()
    spawn_once(env, work)  # the first start writes the command cache, the database, the early answer
    load_before = os.getloadavg()
    early = [spawn_once(env, work) for _ in range(args.spawns)]
    cold = [spawn_once(env, work, cold=True) for _ in range(max(3, args.spawns // 4))]
    rates = throughput(env, work, args.tokens, args.rounds)
    load_after = os.getloadavg()
    print(f"{'measure':48} {'wall median, p95':>22} {'CPU median':>11} {'budget':>10}")
    for name, spawns in (
        ("spawn -> get_state answered (early answer)", early),
        ("  the same with a cold cache", cold),
    ):
        walls = sorted(s[0] for s in spawns)
        p95 = walls[max(0, int(len(walls) * 0.95) - 1)]
        cpu = statistics.median(s[1] for s in spawns)
        budget = f"<= {SPAWN_BUDGET_MS} ms" if spawns is early else ""
        print(f"{name:48} {statistics.median(walls):>10.0f} ms, {p95:>5.0f} ms {cpu:>8.0f} ms {budget:>10}")
    print(
        f"{'tokens/s through message_update (median)':48} {statistics.median(rates):>16,.0f} tok/s"
        f" {'':>11} {'>= ' + format(TOKENS_BUDGET, ','):>10}"
    )
    before, after = (" ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after))
    print(f"load average {before} -> {after}")


if __name__ == "__main__":
    main()
