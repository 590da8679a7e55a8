"""Kernel benchmarks: start-up with every plugin, interrupt latency, event throughput.

Prints a table and exits 0; not a test. Run: ``python bench/bench_core.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes_core import Kernel, TextDelta


def _settings(tmp: Path) -> dict[str, object]:
    return {"data_dir": str(tmp), "titles": {"refine": False}, "model": "mock:echo"}


async def kernel_start(tmp: Path, runs: int = 10) -> list[float]:
    """Time Kernel.create (all installed plugins) plus entering running()."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        kernel = Kernel.create(entry_points=True, settings=_settings(tmp))
        async with kernel.running():
            out.append((time.perf_counter() - t0) * 1000)
    return out


async def interrupt_latency(tmp: Path, runs: int = 20) -> list[float]:
    """Time session.interrupt() → TurnCompleted while a delayed mock reply streams."""
    kernel = Kernel.create(entry_points=["mock", "sqlite", "tools"], settings=_settings(tmp))
    out = []
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="bench", cwd=tmp)
        for _ in range(runs):
            turn = await session.submit("[[delay 20]] " + " ".join(["word"] * 200), owner="bench")
            events = turn.events()
            async for ev in events:
                if isinstance(ev, TextDelta):
                    break
            t0 = time.perf_counter()
            await session.interrupt()
            async for ev in events:
                if type(ev).__name__ == "TurnCompleted":
                    out.append((time.perf_counter() - t0) * 1000)
                    break
    return out


async def throughput(tmp: Path) -> tuple[float, float]:
    """Deltas/s through the session bus for a [[tokens 20000]] turn (memory and SQLite)."""
    kernel = Kernel.create(entry_points=["mock", "sqlite", "tools"], settings=_settings(tmp))
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="bench", cwd=tmp)
        t0 = time.perf_counter()
        turn = await session.submit("[[tokens 20000]]", owner="bench")
        count = 0
        async for ev in turn.events():
            if isinstance(ev, TextDelta):
                count += 1
        elapsed = time.perf_counter() - t0
    return count / elapsed, elapsed * 1000


def row(name: str, values: list[float], budget: str) -> str:
    med = statistics.median(values)
    p95 = sorted(values)[max(0, int(len(values) * 0.95) - 1)]
    return f"| {name:<44} | {med:>9.2f} | {p95:>9.2f} | {budget:<12} |"


async def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        start = await kernel_start(tmp)
        interrupts = await interrupt_latency(tmp)
        rate, ms = await throughput(tmp)
    print(f"python {sys.version.split()[0]}")
    print("| metric                                       | median ms |    p95 ms | budget       |")
    print("|----------------------------------------------|-----------|-----------|--------------|")
    print(row("kernel start, all plugins (create+running)", start, "report"))
    print(row("interrupt while streaming -> TurnCompleted", interrupts, "<= 50 ms"))
    print(f"| {'[[tokens 20000]] turn, deltas/s':<44} | {rate:>9.0f} | {ms:>7.0f}ms | report       |")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
