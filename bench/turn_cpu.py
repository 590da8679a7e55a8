"""CPU per request of the kernel alone, one request at a time (issue #30, per-turn CPU).

Each request opens a new session the way ``hermes api`` does (source ``api``, a new id, its
folder made for it), runs one turn on the mock model of five tokens and closes it; the
requests run one after another (c=1), so the figures are the kernel's own per-turn work with no
queueing. Prints CPU per request and the wall time from ``submit`` to the first text delta.
``--profile`` prints the cProfile top functions instead. Not a test.

``--stream N`` measures the per-token path instead: ``--parallel`` sessions (10) each stream one
turn of N tokens, one per millisecond (the mock's ``[[delay 1]]``, so every token is read after a
wait and none are merged), and it prints the kernel's CPU per streamed token, the mock's timer
included.

Run: ``.venv/bin/python bench/turn_cpu.py [--storage memory|sqlite] [--requests 2000] [--stream 2000]``;
pair it with another build's Python (``/other/.venv/bin/python bench/turn_cpu.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from hermes_core import Kernel, TextDelta
from hermes_core.testing import make_kernel


async def _request(kernel: Kernel, cwd: Path, n: int) -> float:
    session_id = uuid.uuid4().hex
    session = await kernel.open_session(
        session_id, source="api", owner="me", cwd=cwd / session_id, create_cwd=True, new=True
    )
    t0 = time.perf_counter()
    turn = await session.submit(f"hello {n} [[tokens 5]]", owner="me")
    first = 0.0
    async for ev in turn.events():
        if not first and isinstance(ev, TextDelta):
            first = time.perf_counter() - t0
    await session.close()
    return first


@contextlib.asynccontextmanager
async def _running(storage: str) -> AsyncIterator[tuple[Kernel, Path]]:
    """A running kernel on ``storage`` (mock model) and a folder for its sessions' workspaces."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        kernel = make_kernel(
            entry_points=["mock", "tools", "sqlite"],
            settings={"data_dir": str(data), "storage": {"backend": storage}},
        )
        async with kernel.running():
            yield kernel, Path(tmp)


async def main(storage: str, requests: int, profile: bool) -> None:
    async with _running(storage) as (kernel, cwd):
        for n in range(200):  # warm-up
            await _request(kernel, cwd, n)
        prof = cProfile.Profile() if profile else None
        firsts = []
        cpu = time.process_time()
        if prof:
            prof.enable()
        for n in range(requests):
            firsts.append(await _request(kernel, cwd, n))
        if prof:
            prof.disable()
        cpu = time.process_time() - cpu
    print(
        f"{sys.prefix} [{storage}]: CPU per request {cpu * 1000 / requests:.3f} ms; "
        f"submit->first delta median {statistics.median(firsts) * 1000:.3f} ms"
    )
    if prof:
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(45)
        stats.sort_stats("cumtime").print_stats(70)
        stats.dump_stats("/tmp/turn_cpu.prof")


async def _stream(kernel: Kernel, cwd: Path, tokens: int) -> int:
    session_id = uuid.uuid4().hex
    session = await kernel.open_session(
        session_id, source="api", owner="me", cwd=cwd / session_id, create_cwd=True, new=True
    )
    turn = await session.submit(f"stream [[tokens {tokens}]] [[delay 1]]", owner="me")
    deltas = 0
    async for ev in turn.events():
        deltas += isinstance(ev, TextDelta)
    await session.close()
    return deltas


async def stream_main(storage: str, tokens: int, parallel: int) -> None:
    async with _running(storage) as (kernel, cwd):
        await asyncio.gather(*(_stream(kernel, cwd, 200) for _ in range(parallel)))  # warm-up
        cpu = time.process_time()
        deltas = await asyncio.gather(*(_stream(kernel, cwd, tokens) for _ in range(parallel)))
        cpu = time.process_time() - cpu
    print(
        f"{sys.prefix} [{storage}]: {parallel} streams of {tokens} tokens, {sum(deltas)} deltas; "
        f"CPU per token {cpu * 1e6 / (parallel * tokens):.1f} us"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--storage", default="memory")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--stream", type=int, default=0, help="tokens per turn: the per-token path")
    parser.add_argument("--parallel", type=int, default=10, help="with --stream: sessions at once")
    args = parser.parse_args()
    if args.stream:
        asyncio.run(stream_main(args.storage, args.stream, args.parallel))
    else:
        asyncio.run(main(args.storage, args.requests, args.profile))
