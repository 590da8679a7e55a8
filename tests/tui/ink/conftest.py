"""Fixtures for the Ink TUI tests: a HERMES_HOME with the mock model, a workspace, and TUIs in tmux."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tui.ink import bundle
from tests.tui.ink.contract import check_recording
from tests.tui.ink.screen import InkTui, ink_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HERMES_HOME whose config selects ``mock:echo``."""
    root = tmp_path / "home"
    ink_config(root)
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The folder the user starts the TUI in."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def ink(home: Path, workspace: Path) -> Iterator[Callable[..., InkTui]]:
    """Start Ink TUIs; each is stopped after the test. Then every recorded frame is checked
    against the fields the TUI reads (tests/tui/ink/contract.py), no request may have been
    answered with an error, and the last screen may show no error line."""
    bundle.entry_js()
    bundle.node()
    bundle.tmux()
    started: list[InkTui] = []

    def start(**kw: Any) -> InkTui:
        tui = InkTui(kw.pop("home", home), kw.pop("workspace", workspace), **kw)
        started.append(tui)
        return tui

    yield start
    problems: list[str] = []
    for tui in started:
        tui.close()
        problems += check_recording(tui.recording)
        problems += [f"{method} was answered with {error}" for method, error in tui.recording.errors()]
        problems += [f"the screen shows: {line.strip()}" for line in _error_lines(tui.last_screen or "")]
        tui.remove()
    assert not problems, "the Ink TUI flows went wrong:\n" + "\n".join(problems)


def _error_lines(screen: str) -> list[str]:
    """Lines the TUI prints for a failed request or an unknown method."""
    return [
        line
        for line in screen.splitlines()
        if line.strip().lstrip("·").strip().startswith("error:") or "unknown method" in line
    ]
