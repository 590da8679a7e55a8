"""The version every surface reports is the installed distribution's version."""

from __future__ import annotations

import importlib.metadata

import hermes_core


def test_core_version_matches_the_installed_distribution() -> None:
    assert hermes_core.__version__ == importlib.metadata.version("hermes-agent")
