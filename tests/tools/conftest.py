"""Fixtures for the core tools tests: the plugin's specs and a context factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tools_testkit import FakeToolContext, load_specs

from hermes_core import ToolSpec


@pytest.fixture
def specs() -> dict[str, ToolSpec]:
    """Return the core tools by name."""
    return load_specs()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Return a fresh workspace directory (resolved, so results compare as plain paths)."""
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    return root


@pytest.fixture
def make_ctx(workspace: Path) -> Callable[..., FakeToolContext]:
    """Return a factory of contexts rooted at the workspace."""

    def make(**kwargs: Any) -> FakeToolContext:
        return FakeToolContext(workspace, **kwargs)

    return make


@pytest.fixture
def ctx(make_ctx: Callable[..., FakeToolContext]) -> FakeToolContext:
    """Return a context rooted at the workspace with default settings."""
    return make_ctx()
