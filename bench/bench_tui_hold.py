"""What holding TUI frames until the event log stores them costs (docs/reference/tui-gateway.md#
sequence-numbers-and-replay): the gateway's session stream in-process on a SQLite file, with
holding (as shipped) and without it (frames sent at once, as before), turns alternating between
the two so load from elsewhere hits both.

Per mode: the hold (a numbered frame's send time minus the time it was numbered, p50/p99/max),
frames and log writes per turn, the turn's wall time, and the process CPU time per turn
(``time.process_time``: user + system of this process, kernel, writer and stream alike). The
load average is printed with the figures. Not a test.

``--e2e`` measures the same through ``hermes tui`` over stdio on a SQLite file instead: per turn
(``[[tokens 300]] [[delay 5]]``, a fresh session each), submit to first ``message.delta``, submit
to ``message.complete``, and the gateway process's CPU time (user + system, from ``/proc``) per
turn. ``--base DIR`` runs a second gateway from a checkout of other code (put first on its
``PYTHONPATH``, with ``DIR/plugins``), turns alternating between the two: a paired before/after.

Run: ``python bench/bench_tui_hold.py [--turns 5] [--tokens 3000] [--paced 300]`` or
``python bench/bench_tui_hold.py --e2e [--base /tmp/base-checkout] [--turns 10]``.
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


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def e2e(turns: int, base: str | None) -> None:
    """Paired turns through ``hermes tui`` over stdio on SQLite (see the module's docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_tui import Gateway, fresh, wait_complete

    variants = {"this": None, **({"base": base} if base else {})}
    with tempfile.TemporaryDirectory() as tmp:
        gateways = {}
        for name, code in variants.items():
            home = Path(tmp) / name
            home.mkdir()
            (home / "config.toml").write_text(
                'model = "mock:echo"\n[compression]\nauto_threshold = 0\n[titles]\nrefine = false\n'
            )
            saved = os.environ.get("PYTHONPATH")
            if code:
                os.environ["PYTHONPATH"] = f"{code}:{code}/plugins"
            try:
                gateways[name] = Gateway(home)
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
        try:
            for gw in gateways.values():
                gw.call("session.status", session_id="none")  # started and answering
            rows: dict[str, dict[str, list[float]]] = {
                n: {"first": [], "done": [], "cpu": []} for n in gateways
            }
            print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            for round_ in range(turns + 1):
                for name, gw in gateways.items():
                    sid = fresh(gw)
                    done_before = len(gw.completes)
                    gw.first_delta = None
                    cpu = _cpu_s(gw.proc.pid)
                    _id, sent = gw.send("prompt.submit", session_id=sid, text="[[tokens 300]] [[delay 5]]")
                    done, _ = wait_complete(gw, done_before)
                    if round_ == 0:
                        continue  # warm-up
                    rows[name]["first"].append((gw.first_delta or done) - sent)
                    rows[name]["done"].append(done - sent)
                    rows[name]["cpu"].append(_cpu_s(gw.proc.pid) - cpu)
            print(
                f"{'code':<6} {'first delta p50 ms':>19} {'max ms':>8} "
                f"{'complete p50 s':>15} {'cpu ms/turn':>12}"
            )
            for name, row in rows.items():
                print(
                    f"{name:<6} {statistics.median(row['first']) * 1000:>19.1f} "
                    f"{max(row['first']) * 1000:>8.1f} "
                    f"{statistics.median(row['done']):>15.3f} {statistics.median(row['cpu']) * 1000:>12.0f}"
                )
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            for gw in gateways.values():
                gw.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5, help="turns per mode and kind")
    parser.add_argument("--tokens", type=int, default=3000, help="tokens of the burst turn (no delay)")
    parser.add_argument("--paced", type=int, default=300, help="tokens of the paced turn (5 ms apart)")
    parser.add_argument("--e2e", action="store_true", help="through hermes tui over stdio on SQLite")
    parser.add_argument("--base", help="with --e2e: a checkout of the code to compare with")
    args = parser.parse_args()
    if args.e2e:
        e2e(args.turns, args.base)
        return 0
    prompts = {"burst": f"[[tokens {args.tokens}]]", "paced": f"[[tokens {args.paced}]] [[delay 5]]"}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; hold = as shipped, send = not held")
    asyncio.run(bench(args.turns, prompts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
