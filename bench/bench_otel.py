"""What tracing costs a turn: time from ``submit`` to the first text delta, and the whole turn,
with tracing off, and on with the SDK exporting to an in-memory exporter (docs/observability.md).

Prints a table and exits 0; not a test. Run: ``python bench/bench_otel.py [--turns 400]``.
Off and on alternate turn by turn in two kernels, so machine load hits both alike.

``--budgets`` adds a third kernel, tracing on and ``bench/budgets-on.toml``'s budgets too (every
model call reserved and settled in the ledger kept in the kernel's records), all three on SQLite:
what issue #26 bounds as tracing and budget reservation together (the HTTP scope check is
``bench_budget_pairs.py --scoped-key``'s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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


BUDGETS = {
    "key": {"spend_usd": 1000000.0},
    "tenant": {"tokens_per_minute": 100000000},
    "prices": {"*": {"input": 0.4, "output": 1.6}},
}


async def main(turns: int, budgets: bool = False) -> None:
    exporter = _install_memory_exporter()
    sides: list[tuple[str, dict[str, Any]]] = [("off", {}), ("on", {"otel": {"enabled": "global"}})]
    if budgets:
        sides.append(("on+budgets", {"otel": {"enabled": "global"}, "budgets": BUDGETS}))
    # With budgets, a plain chat (one model call): what a first token waits for, as in the issue.
    prompt = "hello there" if budgets else '[[tool read_file {"path": "x.txt"}]] hello there'
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "x.txt").write_text("content\n")

        def storage(name: str) -> dict[str, Any]:
            if not budgets:
                return {"backend": "memory"}
            return {"backend": "sqlite", "path": str(root / f"{name}.sqlite3")}

        kernels = {
            name: Kernel.create(
                entry_points=["mock", "tools", "otel", "sqlite"],
                settings={
                    "model": "mock:echo",
                    "titles": {"refine": False},
                    "storage": storage(name),
                    **extra,
                },
            )
            for name, extra in sides
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in kernels}
        async with contextlib.AsyncExitStack() as stack:
            for kernel in kernels.values():
                await stack.enter_async_context(kernel.running())

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
            names = list(kernels)
            for i in range(turns):  # rotate which side goes first: what one leaves behind
                for name in names[i % len(names) :] + names[: i % len(names)]:  # lands on all alike
                    results[name].append(await fresh(name))
    spans = len(exporter.get_finished_spans())
    what = "one model call" if budgets else "a tool call and two model calls"
    print(f"turns per side: {turns} ({what} each); spans exported: {spans}")
    print(f"{'':10} {'first delta median':>20} {'p95':>8} {'turn median':>12} {'p95':>8}  (ms)")
    for name, rows in results.items():
        first = sorted(r[0] for r in rows)
        whole = sorted(r[1] for r in rows)
        p95 = int(len(rows) * 0.95)
        print(
            f"{name:10} {statistics.median(first):20.3f} {first[p95]:8.3f}"
            f" {statistics.median(whole):12.3f} {whole[p95]:8.3f}"
        )
    off = statistics.median(r[1] for r in results["off"])
    on = statistics.median(r[1] for r in results["on"])
    spans_per_turn = "two spans" if budgets else "four spans, one of them a tool"
    print(f"tracing adds {on - off:+.3f} ms to a turn's median ({spans_per_turn})")
    if budgets:
        first_off = statistics.median(r[0] for r in results["off"])
        first_both = statistics.median(r[0] for r in results["on+budgets"])
        added = first_both - first_off
        print(f"tracing and budgets add {added:+.3f} ms to the first delta's median (budget <= 1 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--budgets", action="store_true", help="also tracing with budgets (SQLite)")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.budgets))
