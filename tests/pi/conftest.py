"""Fixtures for the ``hermes pi`` tests: a HERMES_HOME with the mock model, a workspace, processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pi.client import PiProcess, write_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HERMES_HOME whose config selects ``mock:script``."""
    root = tmp_path / "home"
    write_config(root)
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The folder ``hermes pi`` runs in (the session's workspace)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def spawn(home: Path, workspace: Path) -> Iterator[Callable[..., PiProcess]]:
    """Start ``hermes-pi --mode rpc`` processes that are closed (and checked) after the test."""
    started: list[PiProcess] = []

    def make(*args: str, **kw: Any) -> PiProcess:
        kw.setdefault("cwd", workspace)
        proc = PiProcess(kw.pop("home", home), args, **kw)
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.close()


@pytest.fixture
def pi(spawn: Callable[..., PiProcess]) -> PiProcess:
    """One ``hermes pi`` process in a fresh session."""
    return spawn()
