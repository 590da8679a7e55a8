"""Fixtures for the scenario kit tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh HERMES_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path
