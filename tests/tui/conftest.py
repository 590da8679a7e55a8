"""Fixtures for the TUI-gateway tests: a HERMES_HOME with the mock model, and gateway processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tui.client import TuiProcess, write_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HERMES_HOME whose config selects ``mock:echo``."""
    root = tmp_path / "home"
    write_config(root)
    return root


@pytest.fixture
def spawn(home: Path) -> Iterator[Callable[..., TuiProcess]]:
    """Start ``hermes tui`` processes that are closed after the test."""
    started: list[TuiProcess] = []

    def make(*args: str, **kw: Any) -> TuiProcess:
        kw.setdefault("cwd", home)
        proc = TuiProcess(kw.pop("home", home), args, **kw)
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.close()


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A HERMES_HOME shared by one module's gateway process."""
    root = tmp_path_factory.mktemp("tui-home")
    write_config(root)
    return root


@pytest.fixture(scope="module")
def tui(shared_home: Path) -> Iterator[TuiProcess]:
    """One ``hermes tui`` with the mock model, shared by a module's tests (each uses its own sessions)."""
    proc = TuiProcess(shared_home, cwd=shared_home)
    proc.wait_event("", "gateway.ready", timeout=20)
    yield proc
    proc.close()
