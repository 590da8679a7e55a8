"""What holding TUI frames until the event log stores them costs (docs/reference/tui-gateway.md#
sequence-numbers-and-replay): the gateway's session stream in-process on a SQLite file, with
holding (as shipped) and without it (frames sent at once, as before), turns alternating between
the two so load from elsewhere hits both.

Per mode: the hold (a numbered frame's send time minus the time it was numbered, p50/p99/max),
frames and log writes per turn, the turn's wall time, and the process CPU time per turn
(``time.process_time``: user + system of this process, kernel, writer and stream alike). The
load average is printed with the figures. Not a test.

Run: ``python bench/bench_tui_hold.py [--turns 5] [--tokens 3000] [--paced 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_core import Kernel
from hermes_tui_gateway.stream import SessionStream


class Timed(SessionStream):
    """The stream with the time each numbered frame was numbered."""

    numbered: dict[int, float]
    hold = True

    def _emit(self, type_: str, payload: Any, source: int | None) -> None:
        before = self.seq
        now = time.perf_counter()
        super()._emit(type_, payload, source)
        if self.seq != before:
            self.numbered[self.seq] = now

    def _unstored(self, seq: int) -> bool:
        return self.hold and super()._unstored(seq)


class Sink:
    """Records the send time of every numbered frame."""

    def __init__(self) -> None:
        self.sent: dict[int, float] = {}

    def send_bytes(self, data: bytes) -> None:
        now = time.perf_counter()
        params = json.loads(data)["params"]
        if "seq" in params:
            self.sent[params["seq"]] = now


async def one_turn(
    kernel: Kernel, session: Any, text: str, hold: bool, writes: list[int]
) -> dict[str, float]:
    stream = Timed(session, lambda: {}, 512, 4 * 1024 * 1024)  # type: ignore[arg-type, return-value]
    stream.numbered = {}
    stream.hold = hold
    sink = Sink()
    stream.bind(sink)
    before_writes = writes[0]
    cpu = time.process_time()
    wall = time.perf_counter()
    turn = await session.submit(text, owner="bench")
    await turn.outcome
    # Until the last frame is out (held frames wait for their batch).
    while stream.numbered.keys() - sink.sent.keys():
        await asyncio.sleep(0.001)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    await kernel.events.flush()
    stream._sub.close()
    await stream.aclose()
    holds = [sink.sent[s] - t for s, t in stream.numbered.items()]
    return {
        "cpu": cpu,
        "wall": wall,
        "frames": len(holds),
        "writes": writes[0] - before_writes,
        "holds": holds,  # type: ignore[dict-item]
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench(turns: int, prompts: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kernel = Kernel.create(
            entry_points=["mock", "sqlite"],
            strict=True,
            settings={
                "model": "mock:echo",
                "storage": {"backend": "sqlite", "path": str(Path(tmp) / "hermes.sqlite3")},
                "titles": {"refine": False},
                "compression": {"auto_threshold": 0},
            },
        )
        async with kernel.running():
            storage: Any = kernel.storage
            writes = [0]
            real_write = storage.write_event_chunks

            async def counted(batch: Any) -> Any:
                writes[0] += 1
                return await real_write(batch)

            storage.write_event_chunks = counted
            session = await kernel.open_session("bench-hold", source="tui", owner="bench", cwd=Path(tmp))
            await (await session.submit("warm up", owner="bench")).outcome
            print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            print(
                f"{'turn':<8} {'mode':<8} {'frames':>7} {'writes':>7} {'hold p50 ms':>12} "
                f"{'p99 ms':>8} {'max ms':>8} {'wall s':>8} {'cpu s':>7} {'cpu µs/frame':>13}"
            )
            for name, text in prompts.items():
                results: dict[str, list[dict[str, Any]]] = {"hold": [], "send": []}
                for _ in range(turns):
                    for mode in ("hold", "send"):
                        results[mode].append(await one_turn(kernel, session, text, mode == "hold", writes))
                for mode, runs in results.items():
                    holds = [h for r in runs for h in r["holds"]]
                    frames = statistics.mean(r["frames"] for r in runs)
                    writes_per_turn = statistics.mean(r["writes"] for r in runs)
                    cpu = statistics.median(r["cpu"] for r in runs)
                    print(
                        f"{name:<8} {mode:<8} {frames:>7.0f} {writes_per_turn:>7.1f} "
                        f"{pct(holds, 0.5) * 1000:>12.2f} {pct(holds, 0.99) * 1000:>8.2f} "
                        f"{max(holds) * 1000:>8.2f} {statistics.median(r['wall'] for r in runs):>8.3f} "
                        f"{cpu:>7.3f} {cpu / frames * 1e6:>13.0f}"
                    )
            await session.close()
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5, help="turns per mode and kind")
    parser.add_argument("--tokens", type=int, default=3000, help="tokens of the burst turn (no delay)")
    parser.add_argument("--paced", type=int, default=300, help="tokens of the paced turn (5 ms apart)")
    args = parser.parse_args()
    prompts = {"burst": f"[[tokens {args.tokens}]]", "paced": f"[[tokens {args.paced}]] [[delay 5]]"}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; hold = as shipped, send = not held")
    asyncio.run(bench(args.turns, prompts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
