"""Benchmarks of MCP servers as tool sources (docs/mcp.md) against the MCP issue's budgets.

1. ``hermes acp`` spawn -> ``initialize`` reply with three stdio MCP servers configured
   (budget: unchanged, <= 150 ms median).
2. An MCP tool call through the agent minus the server's own time (budget: <= 5 ms median): a
   kernel with the mock model runs turns calling ``mcp_tiny_echo``; the tool's time as the agent
   sees it (``ToolCompleted.duration_s``) minus the same call made directly with the SDK client.
3. 100 sessions opened and closed, each with its own stdio server (started for the session,
   connected, then ended by the close): server processes left running (budget: 0).

The servers are the SDK-built ``tests/mcp/tiny_server.py``. Run:
``.venv/bin/python bench/bench_mcp.py [--spawns 20] [--calls 50] [--sessions 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from bench_acp import Agent, fresh_home  # noqa: E402

TINY = str(ROOT / "tests" / "mcp" / "tiny_server.py")


def _server_toml(name: str) -> str:
    return f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(TINY)}]\n"


async def cold_start(spawns: int) -> dict[int, tuple[list[float], list[float]]]:
    """Spawn -> initialize reply and spawn -> session/new answered, with 0 and 3 servers
    configured; the two homes alternate so machine load hits both alike (one warm-up each)."""
    homes = {}
    for servers in (0, 3):
        env, work, _ = fresh_home()
        names = ("one", "two", "three")[:servers]
        Path(env["HERMES_HOME"], "config.toml").write_text(
            'model = "mock:script"\n' + "".join(_server_toml(n) for n in names)
        )
        homes[servers] = (env, work)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    out: dict[int, tuple[list[float], list[float]]] = {0: ([], []), 3: ([], [])}
    for index in range(spawns + 1):
        for servers, (env, work) in homes.items():
            start = time.perf_counter()
            agent = await Agent.start(env, work)
            await agent.send(init)
            frame = await agent.read()
            initialized = (time.perf_counter() - start) * 1000
            assert frame["result"]["agentCapabilities"]["mcpCapabilities"]["http"] is True
            agent.next_id = 1
            await agent.request("session/new", {"cwd": work, "mcpServers": []})
            ready = (time.perf_counter() - start) * 1000
            await agent.stop()
            if index:  # the first round warms the caches
                out[servers][0].append(initialized)
                out[servers][1].append(ready)
    return out


async def direct_calls(calls: int) -> list[float]:
    from mcp import Client, StdioServerParameters

    out = []
    async with Client(StdioServerParameters(command=sys.executable, args=[TINY]), cache=None) as client:
        for _ in range(5):
            await client.call_tool("echo", {"text": "x"})
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"text": "x"})
            out.append((time.perf_counter() - start) * 1000)
    return out


async def agent_calls(calls: int) -> tuple[list[float], list[float]]:
    from hermes_core import ToolCompleted
    from hermes_core.testing import make_kernel

    kernel = make_kernel(
        entry_points=["mock", "mcp"],
        settings={"model": "mock:echo", "mcp_servers": {"tiny": {"command": sys.executable, "args": [TINY]}}},
    )
    tool_ms, turn_ms = [], []
    async with kernel.running():
        while not kernel.registry.tool("mcp_tiny_echo"):
            await asyncio.sleep(0.05)
        session = await kernel.open_session(source="embed", owner="bench", cwd=Path.cwd())
        for index in range(calls + 5):
            start = time.perf_counter()
            turn = await session.submit('[[tool mcp_tiny_echo {"text": "x"}]]', owner="bench")
            done = [e async for e in turn.events() if isinstance(e, ToolCompleted)]
            await turn.outcome
            if index >= 5:
                turn_ms.append((time.perf_counter() - start) * 1000)
                tool_ms.append(done[0].duration_s * 1000)
            assert done[0].result_text == "echo: x", done[0].result_text
    return tool_ms, turn_ms


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def sessions_cycle(count: int, batch: int = 10) -> tuple[int, int, float]:
    from hermes_core.testing import make_kernel

    pid_file = Path(tempfile.mkdtemp(prefix="hermes-bench-mcp-")) / "pids"
    server = {
        "name": "own",
        "command": sys.executable,
        "args": [TINY],
        "env": [{"name": "TINY_PID_FILE", "value": str(pid_file)}],
    }
    kernel = make_kernel(entry_points=["mock", "mcp"], settings={"model": "mock:echo"})
    start = time.perf_counter()
    async with kernel.running():

        async def one() -> None:
            session = await kernel.open_session(source="embed", owner="bench", cwd=Path.cwd())
            await kernel.tool_sources.attach("mcp", session.id, [server])
            await kernel.tool_sources.settle(session.id)
            assert kernel.registry.tool("mcp_own_echo", session.id) is not None
            await session.close()

        for first in range(0, count, batch):
            await asyncio.gather(*(one() for _ in range(min(batch, count - first))))
    elapsed = time.perf_counter() - start
    pids = [int(p) for p in pid_file.read_text().split()]
    return len(pids), sum(_alive(p) for p in pids), elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spawns", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args()

    starts = await cold_start(args.spawns)
    (base, base_ready), (spawn, spawn_ready) = starts[0], starts[3]
    direct = await direct_calls(args.calls)
    tool, turn = await agent_calls(args.calls)
    started, left, elapsed = await sessions_cycle(args.sessions)

    overhead = statistics.median(tool) - statistics.median(direct)
    rows = [
        ("acp spawn -> initialize, no MCP server", f"{statistics.median(base):.0f} ms", "-"),
        ("acp spawn -> initialize, 3 MCP servers", f"{statistics.median(spawn):.0f} ms", "<= 150 ms median"),
        ("acp spawn -> session/new, no MCP server", f"{statistics.median(base_ready):.0f} ms", "-"),
        ("acp spawn -> session/new, 3 MCP servers", f"{statistics.median(spawn_ready):.0f} ms", "-"),
        ("MCP call, direct SDK client (median)", f"{statistics.median(direct):.2f} ms", "-"),
        ("MCP call as the agent's tool (median)", f"{statistics.median(tool):.2f} ms", "-"),
        ("agent overhead of an MCP call (median)", f"{overhead:.2f} ms", "<= 5 ms"),
        ("whole turn with one MCP call (median)", f"{statistics.median(turn):.2f} ms", "-"),
        (f"{args.sessions} sessions with a stdio server: started", str(started), "-"),
        (f"{args.sessions} sessions with a stdio server: processes left", str(left), "0"),
        ("  (time for the sessions)", f"{elapsed:.1f} s", "-"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>10}  budget")
    for name, value, budget in rows:
        print(f"{name:<{width}}  {value:>10}  {budget}")


if __name__ == "__main__":
    asyncio.run(main())
