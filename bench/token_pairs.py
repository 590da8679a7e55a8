"""CPU per streamed token of two ``hermes api`` servers, measured in alternating rounds (issue #30).

Starts the fake upstream of ``bench_api.py`` and two servers (``--base-bin`` against this
checkout's ``hermes``, or this checkout twice with ``--env-b`` set for the second), then runs
rounds of N streams of D deltas at 50 tok/s against each in turn, and prints per round and as
medians: server CPU per 1000 tokens and the content chunks a client got per stream (below D when
the server merged deltas because it fell behind; CPU per token is only comparable between runs
that merged alike). Pick N so that neither server falls behind (``--streams 60`` on two shared
cores) to compare the cost of one unmerged token. Not a test.

Run: ``.venv/bin/python bench/token_pairs.py [--streams 60] [--deltas 100] [--rounds 6]
[--base-bin OTHER/.venv/bin/hermes] [--env-b NAME=VALUE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_api
from bench_api_ratio import KEY, PATH, burst, start_hermes, streams


async def main(args: argparse.Namespace) -> None:
    fake_port = bench_api.free_port()
    fake = subprocess.Popen([sys.executable, bench_api.__file__, "--fake", str(fake_port)])
    env_b = dict(item.split("=", 1) for item in args.env_b)
    bins = {"a": Path(args.base_bin) if args.base_bin else bench_api.BIN, "b": bench_api.BIN}
    envs: dict[str, dict[str, str]] = {"a": {}, "b": env_b}
    with tempfile.TemporaryDirectory() as tmp:
        procs = {}
        targets = {}
        try:
            for name in ("a", "b"):
                proc, port = start_hermes(Path(tmp) / name, fake_port, "", envs[name], bins[name])
                procs[name] = proc
                targets[name] = bench_api.Target(f"http://127.0.0.1:{port}{PATH}", KEY, "fake:")
            await asyncio.sleep(1.0)
            for name in ("a", "b"):
                for _ in range(2):
                    await burst(targets[name], 20)
                await streams(targets[name], args.streams, 10, 20, procs[name].pid)
            cpu: dict[str, list[float]] = {"a": [], "b": []}
            chunks: dict[str, list[float]] = {"a": [], "b": []}
            gaps: dict[str, list[float]] = {"a": [], "b": []}
            ttfts: dict[str, list[float]] = {"a": [], "b": []}
            for i in range(args.rounds):
                order = ("a", "b") if i % 2 == 0 else ("b", "a")
                if args.together:  # both at once: the machine's load falls on both alike
                    results = await asyncio.gather(
                        *(streams(targets[n], args.streams, args.deltas, 20, procs[n].pid) for n in order)
                    )
                    got_by = dict(zip(order, results, strict=True))
                else:
                    got_by = {}
                    for n in order:
                        got_by[n] = await streams(targets[n], args.streams, args.deltas, 20, procs[n].pid)
                for name, got in got_by.items():
                    cpu[name].append(got["cpu_per_1k"])
                    chunks[name].append(got["chunks"])
                    gaps[name].append(got["gap_p99"])
                    ttfts[name].append(got["ttft_p99"])
                load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                print(
                    f"round {i + 1}: CPU per 1k tokens a {cpu['a'][-1]:.1f}  b {cpu['b'][-1]:.1f} ms; "
                    f"chunks per stream a {chunks['a'][-1]:.1f}  b {chunks['b'][-1]:.1f}; "
                    f"gap p99 a {gaps['a'][-1]:.0f}  b {gaps['b'][-1]:.0f} ms; "
                    f"TTFT p99 a {ttfts['a'][-1]:.0f}  b {ttfts['b'][-1]:.0f} ms; load {load}",
                    flush=True,
                )
            for name in ("a", "b"):
                extra = " " + " ".join(args.env_b) if name == "b" and args.env_b else ""
                print(
                    f"{name} ({bins[name]}{extra}): "
                    f"median CPU per 1k tokens {statistics.median(cpu[name]):.1f} ms "
                    f"(min {min(cpu[name]):.1f}), chunks per stream {statistics.median(chunks[name]):.1f}, "
                    f"median gap p99 {statistics.median(gaps[name]):.0f} ms, "
                    f"median TTFT p99 {statistics.median(ttfts[name]):.0f} ms"
                )
            diffs = [b - a for a, b in zip(cpu["a"], cpu["b"], strict=True)]
            spread = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
            print(
                f"b - a per round: median {statistics.median(diffs):+.1f}, "
                f"mean {statistics.mean(diffs):+.1f} (standard error {spread:.1f}) ms per 1k tokens"
            )
        finally:
            for target in targets.values():
                await target.close()
            for proc in procs.values():
                proc.terminate()
                proc.wait(30)
            fake.terminate()
            fake.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=60)
    parser.add_argument("--deltas", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--base-bin", help="the hermes of server a (default: this checkout's)")
    parser.add_argument("--env-b", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--together", action="store_true", help="stream to both servers at once in each round (not in turn)"
    )
    asyncio.run(main(parser.parse_args()))
