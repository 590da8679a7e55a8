"""Fixtures for the ``hermes chat`` tests: a HERMES_HOME with the mock model and a work folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tui.client import write_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HERMES_HOME whose config selects ``mock:echo``."""
    root = tmp_path / "home"
    write_config(root, 'model = "mock:echo"\n[titles]\nrefine = false\n')
    return root


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The folder the chat is started in."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def scrubbed(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the gateway the chat spawns at the test's HERMES_HOME, and nothing else of ours."""
    for name in list(os.environ):
        if (
            name.startswith(("HERMES_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_"))
            and name != "HERMES_TEST_TIME_SCALE"
        ):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home
