"""Fixtures for kernel tests: a running kernel on the mock provider in a temp workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import Kernel
from hermes_core.testing import make_kernel


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
async def kernel(tmp_path: Path) -> AsyncIterator[Kernel]:
    k = make_kernel(
        entry_points=["mock", "tools"],
        settings={"data_dir": str(tmp_path / "data"), "agent": {"provider_retries": 0}},
    )
    (tmp_path / "data").mkdir()
    async with k.running():
        yield k


async def collect(turn: Any) -> list[Any]:
    """Return every event of a turn."""
    return [ev async for ev in turn.events()]


def names(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]
