"""Fixtures for the ACP tests: a temporary Hermes home, the SDK client harness, a raw driver.

Every harness records each frame both ways and, at teardown, validates every agent-sent frame
against the official schema and checks the wire invariants (docs/reference/acp.md#wire-invariants).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.acp import wire
from tests.acp.client import Agent, RawAgent, RecordingClient

HERMES = str(Path(sys.executable).with_name("hermes"))


def _toml(data: dict[str, Any], prefix: str = "") -> str:
    """Render nested dicts as TOML tables (scalars and lists as JSON, which TOML accepts)."""
    scalars = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    text = (f"[{prefix}]\n" if prefix and scalars else "") + "".join(line + "\n" for line in scalars)
    for key, value in data.items():
        if isinstance(value, dict):
            text += _toml(value, f"{prefix}.{key}" if prefix else key)
    return text


class Home:
    """A temporary ``HERMES_HOME`` with a workspace next to it."""

    def __init__(self, root: Path) -> None:
        """Create the directories.

        :param root: the test's ``tmp_path``.
        """
        self.path = root / "home"
        self.path.mkdir()
        self.workspace = root / "work"
        self.workspace.mkdir()
        self.config: dict[str, Any] = {"model": "mock:script"}

    def write_config(self, text: str | None = None) -> None:
        """Write ``config.toml`` (the given text, else ``model = "mock:script"`` plus extras).

        :param text: the raw TOML, if any.
        """
        if text is None:
            text = _toml(self.config)
        (self.path / "config.toml").write_text(text)

    def env(self, **extra: str) -> dict[str, str]:
        """Return the environment for a ``hermes acp`` process.

        :param extra: more variables.
        :returns: the full environment.
        """
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env.update({"HERMES_HOME": str(self.path), "PYTHONUNBUFFERED": "1"})
        env.update(extra)
        return env


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """Return a configured home (``mock:script``)."""
    h = Home(tmp_path)
    h.write_config()
    return h


@pytest.fixture
async def spawn(home: Home, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Return ``await spawn(client=None, env=None, initialize=dict|None)`` starting agents.

    Every agent is validated and checked at teardown.
    """
    from acp import spawn_agent_process

    stack = contextlib.AsyncExitStack()
    agents: list[Agent] = []

    async def start(
        client: RecordingClient | None = None,
        env: dict[str, str] | None = None,
        initialize: dict[str, Any] | None = None,
        cwd: Path | None = None,
    ) -> Agent:
        client = client or RecordingClient()
        frames: list[tuple[str, dict[str, Any]]] = []

        def record(event: Any) -> None:
            frames.append(("in" if event.direction.value == "incoming" else "out", event.message))

        stderr_path = tmp_path / f"stderr-{len(agents)}.txt"
        stderr_file = stack.enter_context(open(stderr_path, "wb"))
        conn, process = await stack.enter_async_context(
            spawn_agent_process(
                client,  # type: ignore[arg-type]
                HERMES,
                "acp",
                env=env or home.env(),
                cwd=str(cwd or tmp_path),
                transport_kwargs={"stderr": stderr_file, "limit": 128 * 1024 * 1024},
                observers=[record],
            )
        )
        agent = Agent(conn, process, client, frames, stderr_path)
        agents.append(agent)
        if initialize is not None:
            await agent.initialize(**initialize)
        return agent

    try:
        yield start
    finally:
        if agents:
            await asyncio.sleep(0.05)
        await stack.aclose()
        problems: list[str] = []
        for agent in agents:
            problems += wire.validate_frames(agent.frames)
            problems += wire.invariants(agent.frames)
        assert not problems, "\n".join(problems[:20])


@pytest.fixture
async def raw(home: Home, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Return ``await raw(env=None, extra_env=None)`` starting a raw-driven agent."""
    processes: list[asyncio.subprocess.Process] = []

    async def start(env: dict[str, str] | None = None, stderr: Any = None) -> RawAgent:
        process = await asyncio.create_subprocess_exec(
            HERMES,
            "acp",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr if stderr is not None else asyncio.subprocess.DEVNULL,
            env=env or home.env(),
            cwd=str(tmp_path),
            limit=128 * 1024 * 1024,
        )
        processes.append(process)
        return RawAgent(process)

    try:
        yield start
    finally:
        for process in processes:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
