"""Fixtures for delegation tests: a running kernel with the mock model, the core tools and
``delegate_task``, in a temp workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
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
def make(tmp_path: Path) -> Callable[..., Kernel]:
    def build(**settings: Any) -> Kernel:
        (tmp_path / "data").mkdir(exist_ok=True)
        merged = {"data_dir": str(tmp_path / "data"), "model": "mock:echo", "agent": {"provider_retries": 0}}
        merged.update(settings)
        return make_kernel(entry_points=["mock", "tools", "delegation"], settings=merged)

    return build


@pytest.fixture
async def kernel(make: Callable[..., Kernel]) -> AsyncIterator[Kernel]:
    k = make()
    async with k.running():
        yield k
