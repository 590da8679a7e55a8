"""Benchmark the shared JSON-RPC peer over OS pipes: outbound frames/s and request round trips/s.

Run: ``.venv/bin/python bench/bench_rpc.py [N]``. Prints a table and exits 0. The target for
small outbound frames is at least 50,000 frames/s.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from typing import Any

from hermes_core import rpc
from hermes_core.rpc import _io as _rpc_io


def _count_lines(fd: int, expected: int, done: threading.Event, stamp: list[float]) -> None:
    """Read ``fd`` on a thread until ``expected`` newlines arrived, then note the time."""
    seen = 0
    while seen < expected:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        seen += chunk.count(b"\n")
    stamp.append(time.perf_counter())
    done.set()


async def _echo(message: dict[str, Any]) -> dict[str, Any]:
    return {"result": message["params"]}


async def bench_outbound(n: int) -> tuple[float, float]:
    """Time ``n`` small notifications from enqueue to the last byte read by the other end."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    peer = rpc.RpcPeer(reader=in_r, writer=out_w, dispatch=_echo)
    done, stamp = threading.Event(), []  # type: ignore[var-annotated]
    threading.Thread(target=_count_lines, args=(out_r, n, done, stamp), daemon=True).start()
    params = {"type": "message.delta", "session_id": "20260301_101500_a1b2c3", "payload": {"text": "Hel"}}
    start = time.perf_counter()
    for seq in range(n):
        peer.notify("event", {**params, "seq": seq})
    enqueued = time.perf_counter()
    await asyncio.to_thread(done.wait, 60)
    await peer.aclose()
    for fd in (in_r, in_w, out_r, out_w):
        os.close(fd)
    return n / (stamp[0] - start), n / (enqueued - start)


async def bench_round_trip(n: int) -> float:
    """Time ``n`` echo requests written in bulk until all ``n`` responses were read."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    peer = rpc.RpcPeer(reader=in_r, writer=out_w, dispatch=_echo)
    runner = asyncio.create_task(peer.run())
    done, stamp = threading.Event(), []  # type: ignore[var-annotated]
    threading.Thread(target=_count_lines, args=(out_r, n, done, stamp), daemon=True).start()
    payload = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"text":"hello"}}\n' % i for i in range(n)
    )

    def feed() -> None:
        os.write(in_w, payload)
        os.close(in_w)

    start = time.perf_counter()
    threading.Thread(target=feed, daemon=True).start()
    await asyncio.to_thread(done.wait, 60)
    await runner
    await peer.aclose()
    for fd in (in_r, out_r, out_w):
        os.close(fd)
    return n / (stamp[0] - start)


async def main(n: int) -> None:
    rows: list[tuple[str, float]] = []
    delivered, enqueue = await bench_outbound(n)
    rows.append(("outbound notify, delivered (coalescing writer)", delivered))
    rows.append(("outbound notify, enqueue only", enqueue))
    saved = _rpc_io._BATCH_BYTES
    _rpc_io._BATCH_BYTES = 0  # one os.write per frame, for comparison
    try:
        delivered_single, _ = await bench_outbound(n)
    finally:
        _rpc_io._BATCH_BYTES = saved
    rows.append(("outbound notify, delivered (one write per frame)", delivered_single))
    rows.append(("inbound echo request -> response", await bench_round_trip(n)))
    print(f"hermes_core.rpc over os.pipe(), N={n}")
    print(f"{'case':<52} {'frames/s':>12}")
    for name, rate in rows:
        print(f"{name:<52} {rate:>12,.0f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
