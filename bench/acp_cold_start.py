"""Cold start of ``hermes acp`` alone (docs/reference/acp.md#start-up names this file): spawn ->
``initialize`` reply.

Run: ``.venv/bin/python bench/acp_cold_start.py [--spawns 20]``; ``bench/bench_acp.py`` prints the
same rows together with the other ACP budgets. Prints the median and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_acp import bytecode_note, cold_start


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spawns", type=int, default=20)
    args = parser.parse_args()
    note = bytecode_note()
    if note:
        print(note)
    times, ready = await cold_start(args.spawns)
    ordered = sorted(times)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    print(f"spawn -> initialize reply: median {statistics.median(times):.0f} ms, p95 {p95:.0f} ms")
    print(f"spawn -> session/new answered: median {statistics.median(ready):.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
