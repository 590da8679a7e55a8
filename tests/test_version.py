"""The version and distribution name every surface reports are the installed distribution's."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import hermes_core

PYPROJECT = tomllib.loads(
    (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
)


def test_core_version_matches_the_installed_distribution() -> None:
    assert hermes_core.__version__ == importlib.metadata.version(hermes_core.__distribution__)
    assert hermes_core.__version__ == PYPROJECT["project"]["version"]


def test_the_distribution_is_ours_not_upstreams() -> None:
    # Upstream Hermes is a different project published as hermes-agent (README.md, "Installing").
    assert hermes_core.__distribution__ == PYPROJECT["project"]["name"] == "hermes-kernel"
    assert importlib.metadata.distribution("hermes-kernel").entry_points.select(group="hermes.plugins")
