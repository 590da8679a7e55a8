"""Fixtures for the slash command tests: a running kernel with mock, tools, slash and model-switch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_core import Kernel, Session
from hermes_core.testing import make_kernel

ALL_PLUGINS = ["mock", "tools", "slash", "model-switch"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Return an empty workspace directory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


@pytest.fixture
async def kernel() -> AsyncIterator[Kernel]:
    """Yield a running kernel whose configured model is ``mock:echo``."""
    k = make_kernel(entry_points=ALL_PLUGINS, settings={"model": "mock:echo"})
    async with k.running():
        yield k


@pytest.fixture
async def session(kernel: Kernel, workspace: Path) -> Session:
    """Return a fresh live session in the workspace."""
    return await kernel.open_session(source="cli", owner="t", cwd=workspace)
