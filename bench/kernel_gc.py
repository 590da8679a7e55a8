"""CPU and garbage collection per request of the kernel alone, in-process (issue #30).

Bursts of 50 sessions at once on the mock model, each opened, one turn run and closed (what a
stateless API request does to the kernel), with the process's CPU time and the collector's time
per generation per request. No HTTP, no other process: much steadier than the server benches
on a loaded machine. Not a test.

Run: ``.venv/bin/python bench/kernel_gc.py [--requests 2500]``; pair it with another build's
Python (``/other/.venv/bin/python bench/kernel_gc.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from pathlib import Path

from hermes_core import Kernel
from hermes_core.testing import make_kernel

BURST = 50


async def _request(kernel: Kernel, cwd: Path, n: int) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=cwd)
    turn = await session.submit(f"hello {n} [[tokens 5]]", owner="me")
    async for _ in turn.events():
        pass
    await session.close()


async def main(requests: int) -> None:
    count, spent, began = [0, 0, 0], [0.0, 0.0, 0.0], [0.0]

    def on_collect(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            count[info["generation"]] += 1
            spent[info["generation"]] += time.perf_counter() - began[0]

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        kernel = make_kernel(entry_points=["mock", "tools"], settings={"data_dir": str(data)})
        async with kernel.running():
            for n in range(BURST):  # warm-up
                await _request(kernel, Path(tmp), n)
            gc.collect()
            gc.callbacks.append(on_collect)
            cpu = time.process_time()
            for _ in range(requests // BURST):
                await asyncio.gather(*(_request(kernel, Path(tmp), n) for n in range(BURST)))
            cpu = time.process_time() - cpu
            gc.callbacks.remove(on_collect)
    done = requests // BURST * BURST
    per = ", ".join(f"gen{g} {count[g]} x {spent[g] * 1000 / done:.3f}" for g in range(3))
    print(f"{sys.prefix}: CPU per request {cpu * 1000 / done:.3f} ms; gc ms per request: {per}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2500)
    asyncio.run(main(parser.parse_args().requests))
