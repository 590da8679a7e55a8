"""Delegation benchmarks: spawn overhead, parallel batch wall time, interrupt cascade, RSS.

Prints a table and exits 0; not a test. Run: ``python bench/bench_delegation.py``.
Storage is SQLite in a temp folder, as ``hermes`` uses it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_core import (
    ChatRequest,
    FinishChunk,
    Kernel,
    PolicyDecision,
    Session,
    SubagentEvent,
    TextChunk,
    ToolCallChunk,
    ToolCallInfo,
    ToolCallRequest,
    ToolCompleted,
    hookimpl,
)
from hermes_core.testing import FakeProvider, FakeProviderPlugin


class CallClock:
    """A policy plugin that notes when ``delegate_task`` is called (it has no opinion)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    @hookimpl
    def hermes_before_tool_call(self, session: Session, call: ToolCallInfo) -> PolicyDecision | None:
        if call.name == "delegate_task":
            self.calls.append(time.perf_counter())
        return None


def timed_script(firsts: list[float]) -> Any:
    """Parent: call delegate_task once, then answer; child: note the request time, answer."""

    def script(request: ChatRequest) -> list[Any]:
        users = [m for m in request.messages if m.role == "user"]
        if users and users[-1].content.startswith("child"):
            firsts.append(time.perf_counter())
            return [TextChunk("done"), FinishChunk("stop")]
        if request.messages[-1].role == "tool":
            return [TextChunk("ok"), FinishChunk("stop")]
        args = json.dumps({"goal": "child task"})
        return [ToolCallChunk(ToolCallRequest("c1", "delegate_task", args)), FinishChunk("tool_calls")]

    return script


async def spawn_overhead(tmp: Path, runs: int = 40) -> list[float]:
    """delegate_task call (policy check) → the child's first model request, in ms."""
    firsts: list[float] = []
    clock = CallClock()
    provider = FakeProvider(timed_script(firsts))
    kernel = Kernel.create(
        entry_points=["sqlite", "delegation"],
        plugins=[FakeProviderPlugin(provider), clock],
        settings={"data_dir": str(tmp), "titles": {"refine": False}, "model": "fake:model"},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="bench", cwd=tmp, profile="off")
        for _ in range(runs):
            await (await session.submit("go", owner="bench")).outcome
    return [(f - c) * 1000 for c, f in zip(clock.calls, firsts, strict=True)][5:]


def _settings(tmp: Path) -> dict[str, Any]:
    return {"data_dir": str(tmp), "titles": {"refine": False}, "model": "mock:echo"}


def call(args: dict[str, Any]) -> str:
    return f"[[tool delegate_task {json.dumps(args)}]]"


async def _tool_wall(session: Session, prompt: str) -> float:
    turn = await session.submit(prompt, owner="bench")
    wall = 0.0
    async for ev in turn.events():
        if isinstance(ev, ToolCompleted) and ev.name == "delegate_task":
            wall = ev.duration_s
    return wall * 1000


async def batch_wall(tmp: Path, runs: int = 3) -> tuple[float, float]:
    """delegate_task duration: one child streaming 200 tokens at 5 ms, then three at once (ms)."""
    kernel = Kernel.create(entry_points=["mock", "sqlite", "tools", "delegation"], settings=_settings(tmp))
    goal = "[[tokens 200]] [[delay 5]] stream"
    one, three = [], []
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="bench", cwd=tmp)
        for _ in range(runs):
            one.append(await _tool_wall(session, call({"goal": goal})))
            three.append(await _tool_wall(session, call({"tasks": [{"goal": goal}] * 3})))
    return statistics.median(one), statistics.median(three)


async def interrupt_cascade(tmp: Path, runs: int = 10) -> list[float]:
    """Parent interrupt → the last child's terminal subagent event, three children running (ms)."""
    kernel = Kernel.create(entry_points=["mock", "sqlite", "tools", "delegation"], settings=_settings(tmp))
    out = []
    slow = {"goal": "[[tokens 100000]] [[delay 5]] forever"}
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="bench", cwd=tmp)
        for _ in range(runs):
            bus = session.subscribe()
            turn = await session.submit(call({"tasks": [slow] * 3}), owner="bench")
            progressing: set[str] = set()
            done: set[str] = set()
            t0 = 0.0
            stopping: asyncio.Future[Any] | None = None
            async for ev in bus:
                if not isinstance(ev, SubagentEvent):
                    continue
                if ev.kind == "progress" and not t0:
                    progressing.add(ev.subagent_id)
                    if len(progressing) == 3:
                        t0 = time.perf_counter()
                        stopping = asyncio.ensure_future(session.interrupt())
                elif ev.kind == "complete":
                    done.add(ev.subagent_id)
                    if len(done) == 3:
                        out.append((time.perf_counter() - t0) * 1000)
                        break
            await turn.outcome
            if stopping is not None:
                await stopping
            bus.close()
    return out


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def rss_growth(tmp: Path, runs: int = 50) -> float:
    """RSS growth (KiB) over 50 sequential delegations, each from a new session, after 10 to warm up."""
    kernel = Kernel.create(entry_points=["mock", "sqlite", "tools", "delegation"], settings=_settings(tmp))
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="bench", cwd=tmp)
        prompt = call({"goal": "[[tokens 50]] small job"})
        for _ in range(10):
            await (await session.submit(prompt, owner="bench")).outcome
        await session.compress()
        gc.collect()
        before = rss_kb()
        for _ in range(runs):
            session2 = await kernel.open_session(source="embed", owner="bench", cwd=tmp)
            await (await session2.submit(prompt, owner="bench")).outcome
            await session2.close()
        gc.collect()
        after = rss_kb()
    return float(after - before)


async def main() -> None:
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as d:
        for name in "abcd":
            (Path(d) / name).mkdir()
        spawn = await spawn_overhead(Path(d) / "a")
        p90 = sorted(spawn)[int(len(spawn) * 0.9)]
        value = f"{statistics.median(spawn):.2f} ms median (p90 {p90:.2f})"
        rows.append(("spawn: delegate_task → child's first model request", value, "≤ 10 ms median"))
        one, three = await batch_wall(Path(d) / "b")
        rows.append(("1 child, 200 tokens × 5 ms", f"{one:.0f} ms", ""))
        value = f"{three:.0f} ms = {three / one:.2f} × one"
        rows.append(("3 children at once, same each", value, "≤ 1.3 × one child"))
        cascade = await interrupt_cascade(Path(d) / "c")
        value = f"{statistics.median(cascade):.1f} ms median, max {max(cascade):.1f}"
        rows.append(("parent interrupt → every child's terminal event", value, "≤ 50 ms"))
        growth = await rss_growth(Path(d) / "d")
        value = f"{growth / 1024:.2f} MB ({growth:.0f} KiB)"
        rows.append(("RSS growth after 50 sequential delegations", value, "≤ 5 MB"))
    width = max(len(r[0]) for r in rows)
    for name, value, budget in rows:
        print(f"{name:<{width}}  {value:<40}  {budget}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()) or 0)
