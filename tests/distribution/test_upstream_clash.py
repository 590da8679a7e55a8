"""Upstream Hermes' real ``hermes-agent`` wheel beside ours, in throwaway venvs only.

Both wheels install ``hermes_cli/__init__.py``, ``hermes_cli/main.py`` and the ``hermes`` script,
so whichever is installed last owns them. Ours runs :mod:`hermes_launcher` first, which only we
ship: it finds upstream's metadata and prints one line instead of running code that may be
upstream's. Upstream's wheel goes in with ``--no-deps`` (its own dependencies are not needed to
show the clash, and none of it is ever imported by these tests).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.distribution import builds
from tests.distribution.builds import UPSTREAM_VERSION, Built, Venv

pytestmark = pytest.mark.timeout(900)  # the first test also builds (and may fill the wheelhouse)

REPAIR = re.compile(r"Remove it with `([^`]+)`, then reinstall hermes-kernel with `([^`]+)`$")


def clash_line(venv: Venv, *args: str) -> tuple[str, str]:
    """Run ``hermes ARGS``; check it printed just the clash line; return its two pip commands."""
    result = venv.hermes(*args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    site = venv.site_packages()
    assert lines[0].startswith(
        f"Error: hermes-agent {UPSTREAM_VERSION} is installed in this environment too ({site}); it is "
        "another distribution whose hermes_cli package and hermes command clash with hermes-kernel's."
    ), lines[0]
    found = REPAIR.search(lines[0])
    assert found, lines[0]
    return found.group(1), found.group(2)


def pip_args(command: str, venv: Venv) -> list[str]:
    """Return the arguments after ``PYTHON -m pip`` of a command the line gives."""
    words = shlex.split(command)
    assert words[:3] == [str(venv.python), "-m", "pip"], command
    return words[3:]


def test_upstream_installed_over_ours_then_ours_again(
    built: Built, wheelhouse: Path, upstream: Path, tmp_path: Path
) -> None:
    venv = Venv.create(tmp_path / "venv", wheelhouse, built.folder)
    venv.pip("install", str(built.wheel))
    assert venv.hermes("--version").returncode == 0
    # Upstream installed last owns the script and hermes_cli/main.py: `hermes` is its program now.
    venv.pip("install", "--no-deps", str(upstream))
    assert "from hermes_cli.main import main" in (venv.path / "bin" / "hermes").read_text()
    # Reinstalling ours (how README.md says to get back) brings the launcher, which says so.
    venv.pip("install", "--force-reinstall", "--no-deps", str(built.wheel))
    remove, reinstall = clash_line(venv, "--version")
    assert clash_line(venv, "run", "hello") == (remove, reinstall)
    assert clash_line(venv, "plugins") == (remove, reinstall)
    assert pip_args(remove, venv) == ["uninstall", "hermes-agent"]
    assert pip_args(reinstall, venv) == ["install", "--force-reinstall", "--no-deps", str(built.wheel)]
    # Following the line repairs the environment.
    venv.pip(*pip_args(remove, venv), "--yes")
    venv.pip(*pip_args(reinstall, venv))
    assert "hermes-agent" not in venv.installed()
    version = venv.hermes("--version")
    assert (version.returncode, version.stderr) == (0, ""), version.stderr
    ran = venv.hermes("run", "hello")
    assert (ran.returncode, ran.stdout) == (0, "You said: hello\n"), ran.stderr


def test_an_editable_checkout_beside_upstream(
    built: Built, wheelhouse: Path, upstream: Path, tmp_path: Path
) -> None:
    """Here upstream's hermes_cli in site-packages shadows the checkout's whatever the order."""
    checkout = builds.copy_checkout(tmp_path / "checkout")
    venv = Venv.create(tmp_path / "venv", wheelhouse)
    venv.pip("install", "--no-deps", str(upstream))
    venv.pip("install", "-e", str(checkout))
    remove, reinstall = clash_line(venv, "--version")
    assert pip_args(remove, venv) == ["uninstall", "hermes-agent"]
    assert pip_args(reinstall, venv) == ["install", "--no-deps", "-e", str(checkout)]
    venv.pip(*pip_args(remove, venv), "--yes")
    venv.pip(*pip_args(reinstall, venv))
    assert venv.hermes("--version").returncode == 0
