"""``hermes`` beside another ``hermes-agent`` distribution: one clear line, a non-zero exit.

Upstream Hermes is published as ``hermes-agent`` and ships a ``hermes_cli`` package and a
``hermes`` command of its own (README.md, "Installing"). Here its installed metadata is faked on
``PYTHONPATH``; ``tests/distribution/test_upstream_clash.py`` installs the real wheel beside a built one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hermes_launcher import find_clash
from tests.cli.cli_helpers import Hermes


def _metadata(root: Path, folder: str) -> Path:
    info = root / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-agent\nVersion: 0.19.0\n\n")
    return root


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("run", "hello"), ("plugins",)])
def test_every_command_says_so_in_one_line(hermes: Hermes, tmp_path: Path, args: tuple[str, ...]) -> None:
    site = _metadata(tmp_path / "site", "hermes_agent-0.19.0.dist-info")
    result = hermes(*args, pythonpath=[site], env={"HERMES_MODEL": "mock:echo"})
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: hermes-agent 0.19.0 is installed in this environment too ({site}); ")
    assert f"{sys.executable} -m pip uninstall hermes-agent`" in lines[0]
    # This checkout is installed editable, so the way back is an editable reinstall of it.
    root = Path(__file__).resolve().parents[2]
    assert lines[0].endswith(
        f"then reinstall hermes-kernel with `{sys.executable} -m pip install --no-deps -e {root}`"
    )


def test_other_names_and_build_leftovers_are_not_a_clash(hermes: Hermes, tmp_path: Path) -> None:
    site = tmp_path / "site"
    for folder in (
        "hermes_agent_kit-0.3.7.dist-info",
        "hermes_agent.egg-info",
        "hermes_kernel-0.1.0.dist-info",
    ):
        _metadata(site, folder)
    result = hermes("--version", pythonpath=[site])
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_find_clash_reads_the_version_from_the_folder_name(tmp_path: Path) -> None:
    _metadata(tmp_path / "b", "Hermes_Agent-0.18.2.dist-info")
    missing = str(tmp_path / "missing")
    assert find_clash([missing, str(tmp_path / "a"), str(tmp_path / "b")]) == ("0.18.2", str(tmp_path / "b"))
    assert find_clash([missing, str(tmp_path)]) is None
