"""What tracing costs a turn: time from ``submit`` to the first text delta, and the whole turn,
with tracing off, and on with the SDK exporting to an in-memory exporter (docs/observability.md).

Prints a table and exits 0; not a test. Run: ``python bench/bench_otel.py [--turns 400]``.
Off and on alternate turn by turn in two kernels, so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_core import Kernel, TextDelta


def _install_memory_exporter() -> Any:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return exporter


async def _one(session: Any, prompt: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    turn = await session.submit(prompt, owner="bench")
    first = None
    async for event in turn.events():
        if first is None and isinstance(event, TextDelta):
            first = time.perf_counter()
    end = time.perf_counter()
    return ((first or end) - t0) * 1000, (end - t0) * 1000


async def main(turns: int) -> None:
    exporter = _install_memory_exporter()
    prompt = '[[tool read_file {"path": "x.txt"}]] hello there'
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "x.txt").write_text("content\n")
        kernels = {
            name: Kernel.create(
                entry_points=["mock", "tools", "otel"],
                settings={
                    "model": "mock:echo",
                    "titles": {"refine": False},
                    "storage": {"backend": "memory"},
                    **extra,
                },
            )
            for name, extra in (("off", {}), ("on", {"otel": {"enabled": "global"}}))
        }
        results: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
        async with kernels["off"].running(), kernels["on"].running():

            async def fresh(name: str) -> tuple[float, float]:
                # A session per turn: a growing history would make later turns slower.
                session = await kernels[name].open_session(
                    source="embed", owner="bench", cwd=root, profile="off"
                )
                try:
                    return await _one(session, prompt)
                finally:
                    await session.close()

            for _ in range(20):  # warm both
                for name in kernels:
                    await fresh(name)
            for i in range(turns):  # alternate which side goes first: what one leaves behind
                for name in ("off", "on") if i % 2 else ("on", "off"):  # lands on both alike
                    results[name].append(await fresh(name))
    spans = len(exporter.get_finished_spans())
    print(f"turns per side: {turns} (a tool call and two model calls each); spans exported: {spans}")
    print(f"{'':6} {'first delta median':>20} {'p95':>8} {'turn median':>12} {'p95':>8}  (ms)")
    for name, rows in results.items():
        first = sorted(r[0] for r in rows)
        whole = sorted(r[1] for r in rows)
        p95 = int(len(rows) * 0.95)
        print(
            f"{name:6} {statistics.median(first):20.3f} {first[p95]:8.3f}"
            f" {statistics.median(whole):12.3f} {whole[p95]:8.3f}"
        )
    off = statistics.median(r[1] for r in results["off"])
    on = statistics.median(r[1] for r in results["on"])
    print(f"tracing adds {on - off:+.3f} ms to a turn's median (four spans, one of them a tool)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=400)
    asyncio.run(main(parser.parse_args().turns))
