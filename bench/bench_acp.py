"""Benchmarks of ``hermes acp`` against the budgets of the ACP issue; prints a table.

Conditions: a fresh ``HERMES_HOME`` configured with ``mock:script``, the real ``hermes`` console
script, plain pipes. Run: ``.venv/bin/python bench/bench_acp.py [--spawns 20]``.
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

HERMES = str(Path(sys.executable).with_name("hermes"))


class Agent:
    """A ``hermes acp`` process spoken to over pipes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    @classmethod
    async def start(cls, env: dict[str, str], cwd: str) -> Agent:
        process = await asyncio.create_subprocess_exec(
            HERMES,
            "acp",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            limit=1 << 26,
        )
        return cls(process)

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        frame: dict[str, Any] = json.loads(await self.process.stdout.readline())
        return frame

    async def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Send a request; return its response and how many frames came before it."""
        request_id = self.next_id
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        before = 0
        while True:
            frame = await self.read()
            if "method" not in frame and frame.get("id") == request_id:
                return frame, before
            before += 1

    async def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


def fresh_home() -> tuple[dict[str, str], str, str]:
    root = tempfile.mkdtemp(prefix="hermes-bench-acp-")
    home = os.path.join(root, "home")
    work = os.path.join(root, "work")
    os.makedirs(home)
    os.makedirs(work)
    Path(home, "config.toml").write_text('model = "mock:script"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = home
    return env, work, root


def bytecode_note() -> str | None:
    """Say so when every spawn will compile Hermes from source (no cached bytecode, none written).

    With ``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__`` next to the sources (a fresh
    checkout), each spawn compiles the ~170 modules start-up imports: about 160 ms of CPU on a
    2-core machine, which an installed Hermes (compiled by pip) never pays.
    """
    import hermes_core

    cached = Path(hermes_core.__file__).with_name("__pycache__").is_dir()
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not cached:
        return (
            "note: PYTHONDONTWRITEBYTECODE is set and hermes_core has no __pycache__: every spawn "
            "compiles the sources (run python -m compileall -q hermes_core hermes_cli plugins first)"
        )
    return None


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def cold_start(spawns: int) -> tuple[list[float], list[float]]:
    """Spawn ``hermes acp`` repeatedly; time the initialize reply and the first session/new reply.

    :returns: milliseconds from spawn to the initialize reply, and to a usable agent.
    """
    times, ready = [], []
    env, work, _ = fresh_home()
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    for _ in range(spawns):
        start = time.perf_counter()
        agent = await Agent.start(env, work)
        await agent.send(init)
        await agent.read()
        times.append((time.perf_counter() - start) * 1000)
        await agent.request("session/new", {"cwd": work, "mcpServers": []})
        ready.append((time.perf_counter() - start) * 1000)
        await agent.stop()
    return times, ready


async def cli_floor(spawns: int) -> list[float]:
    """Time ``hermes acp --no-such-flag``: argv parsing plus plugin loading, then a usage error.

    The initialize reply no longer waits for this (hermes_acp.early answers it first); it is
    printed to show what the early step saves.
    """
    env, work, _ = fresh_home()
    times = []
    for _ in range(spawns):
        start = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            HERMES,
            "acp",
            "--no-such-flag",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            cwd=work,
        )
        await process.wait()
        times.append((time.perf_counter() - start) * 1000)
    return times


async def session_costs() -> dict[str, Any]:
    env, work, _ = fresh_home()
    agent = await Agent.start(env, work)
    await agent.request("initialize", {"protocolVersion": 1})
    await agent.request("session/new", {"cwd": work, "mcpServers": []})
    await asyncio.sleep(1.0)
    idle = rss_mb(agent.process.pid)
    news = []
    for _ in range(20):
        start = time.perf_counter()
        await agent.request("session/new", {"cwd": work, "mcpServers": []})
        news.append((time.perf_counter() - start) * 1000)
    # A session of 200 messages: 100 prompts, each one user and one assistant row.
    response, _ = await agent.request("session/new", {"cwd": work, "mcpServers": []})
    sid = response["result"]["sessionId"]
    for index in range(100):
        await agent.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"message {index}"}]}
        )
    await agent.request("session/close", {"sessionId": sid})
    # Cancel while streaming.
    response, _ = await agent.request("session/new", {"cwd": work, "mcpServers": []})
    live = response["result"]["sessionId"]
    cancels = []
    for round_ in range(5):
        prompt_id = 10_000 + round_
        text = "[[delay 50]] [[tokens 2000]]"
        await agent.send(
            {
                "jsonrpc": "2.0",
                "id": prompt_id,
                "method": "session/prompt",
                "params": {"sessionId": live, "prompt": [{"type": "text", "text": text}]},
            }
        )
        while True:
            frame = await agent.read()
            if (
                frame.get("method") == "session/update"
                and frame["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
            ):
                break
        start = time.perf_counter()
        await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": live}})
        while True:
            frame = await agent.read()
            if frame.get("id") == prompt_id and "method" not in frame:
                assert frame["result"]["stopReason"] == "cancelled", frame
                break
        cancels.append((time.perf_counter() - start) * 1000)
    await agent.stop()
    # Load the 200-message session in a fresh process.
    loads = []
    for _ in range(5):
        fresh = await Agent.start(env, work)
        await fresh.request("initialize", {"protocolVersion": 1})
        await fresh.request("session/list", {})
        start = time.perf_counter()
        response, replayed = await fresh.request(
            "session/load", {"sessionId": sid, "cwd": work, "mcpServers": []}
        )
        loads.append((time.perf_counter() - start) * 1000)
        assert "result" in response and replayed >= 200, (response, replayed)
        await fresh.stop()
    return {"idle_rss": idle, "news": news, "loads": loads, "cancels": cancels}


async def stream_costs(rounds: int = 5, tokens: int = 5000) -> tuple[list[float], list[int]]:
    """Stream a prompt of ``tokens`` mock tokens; time it to the response and count the updates."""
    env, work, _ = fresh_home()
    agent = await Agent.start(env, work)
    await agent.request("initialize", {"protocolVersion": 1})
    response, _ = await agent.request("session/new", {"cwd": work, "mcpServers": []})
    sid = response["result"]["sessionId"]
    times, updates = [], []
    for _ in range(rounds):
        prompt = [{"type": "text", "text": f"[[tokens {tokens}]]"}]
        start = time.perf_counter()
        _, frames = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        times.append((time.perf_counter() - start) * 1000)
        updates.append(frames)
    await agent.stop()
    return times, updates


def row(metric: str, value: str, budget: str, ok: bool) -> str:
    return f"| {metric:<44} | {value:>14} | {budget:>12} | {'ok' if ok else 'OVER':<4} |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spawns", type=int, default=20)
    args = parser.parse_args()
    cold, ready = await cold_start(args.spawns)
    floor = statistics.median(await cli_floor(min(args.spawns, 10)))
    costs = await session_costs()
    stream_times, stream_updates = await stream_costs()
    cold_median = statistics.median(cold)
    cold_p95 = sorted(cold)[max(0, int(len(cold) * 0.95) - 1)]
    new_median = statistics.median(costs["news"])
    load_median = statistics.median(costs["loads"])
    cancel_median = statistics.median(costs["cancels"])
    print(f"| {'metric':<44} | {'measured':>14} | {'budget':>12} | {'':<4} |")
    print(f"|{'-' * 46}|{'-' * 16}|{'-' * 14}|{'-' * 6}|")
    print(
        row(
            f"spawn -> initialize reply, median of {len(cold)}",
            f"{cold_median:.0f} ms",
            "<= 150 ms",
            cold_median <= 150,
        )
    )
    print(row("spawn -> initialize reply, p95", f"{cold_p95:.0f} ms", "", True))
    print(row("spawn -> session/new answered, median", f"{statistics.median(ready):.0f} ms", "", True))
    print(row("  CLI + plugin load to a usage error", f"{floor:.0f} ms", "", True))
    print(row("idle RSS", f"{costs['idle_rss']:.1f} MB", "<= 60 MB", costs["idle_rss"] <= 60))
    print(row("session/new once ready, median of 20", f"{new_median:.1f} ms", "<= 50 ms", new_median <= 50))
    print(
        row(
            "session/load of 200 messages, median of 5",
            f"{load_median:.1f} ms",
            "<= 150 ms",
            load_median <= 150,
        )
    )
    print(
        row(
            "session/cancel -> cancelled, median of 5",
            f"{cancel_median:.1f} ms",
            "<= 50 ms",
            cancel_median <= 50,
        )
    )
    print(
        row(
            "prompt of 5000 mock tokens, median of 5",
            f"{statistics.median(stream_times):.0f} ms",
            "",
            True,
        )
    )
    print(row("  session/update frames for it, median", f"{statistics.median(stream_updates):.0f}", "", True))


if __name__ == "__main__":
    asyncio.run(main())
