"""Fixtures for the CLI tests: a private HERMES_HOME and throwaway plugin distributions."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli import cli_helpers as h


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh HERMES_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def hermes(home: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real ``hermes`` script with HERMES_HOME set to ``home``."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return h.run_hermes(home, *args, **kwargs)

    return run


@pytest.fixture
def throwaway(tmp_path: Path) -> Path:
    """A distribution with the throwaway transport; add it to PYTHONPATH."""
    return h.write_distribution(
        tmp_path / "site-throwaway",
        "throwaway",
        {"throwaway_plugin": h.THROWAWAY_TRANSPORT, "throwaway_settings": h.THROWAWAY_SETTINGS},
        {"throwaway": "throwaway_plugin"},
    )


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A distribution whose plugin raises at import."""
    return h.write_distribution(
        tmp_path / "site-broken", "brokenplug", {"brokenplug": h.BROKEN_PLUGIN}, {"broken": "brokenplug"}
    )


@pytest.fixture
def reserved(tmp_path: Path) -> Path:
    """A distribution whose transport is named ``run`` (a reserved command name)."""
    return h.write_distribution(
        tmp_path / "site-reserved",
        "reservedplug",
        {"reservedplug": h.RESERVED_TRANSPORT},
        {"reserved": "reservedplug"},
    )


@pytest.fixture
def no_transport(tmp_path: Path) -> Path:
    """A distribution whose plugin provides no transport."""
    return h.write_distribution(
        tmp_path / "site-plain", "plainplug", {"plainplug": h.NO_TRANSPORT}, {"plain": "plainplug"}
    )
