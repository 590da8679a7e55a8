"""``.ci/schema_gate.py`` on a real clone: a breaking change fails CI unless the major version rose."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _gate(repo: Path, base: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_SCHEMA_BASE"] = base
    return subprocess.run(
        [sys.executable, str(repo / ".ci" / "schema_gate.py")],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


def _commit(repo: Path, path: str, old: str, new: str, message: str) -> None:
    file = repo / path
    text = file.read_text(encoding="utf-8")
    assert old in text, (path, old)
    file.write_text(text.replace(old, new, 1), encoding="utf-8")
    _git(repo, "commit", "-qam", message)


def test_the_gate_fails_a_breaking_change_until_the_major_version_rises(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(repo)], check=True)
    _git(repo, "config", "user.email", "gate@example.invalid")
    _git(repo, "config", "user.name", "gate test")
    base = _git(repo, "rev-parse", "HEAD")

    unchanged = _gate(repo, base)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "0 breaking" in unchanged.stdout

    # A compatible change: a new optional output field.
    _commit(
        repo,
        "plugins/hermes_tui_gateway/wire.py",
        "    text: str\n\n\nclass TurnError",
        "    text: str\n    chars: NotRequired[int]\n\n\nclass TurnError",
        "add an optional field",
    )
    compatible = _gate(repo, base)
    assert compatible.returncode == 0, compatible.stdout + compatible.stderr

    # A breaking change: an event is gone.
    _commit(
        repo,
        "plugins/hermes_tui_gateway/wire.py",
        '    "session.reclaimed": SessionReclaimed,\n',
        "",
        "drop an event",
    )
    breaking = _gate(repo, base)
    assert breaking.returncode == 1, breaking.stdout + breaking.stderr
    assert "BREAKING tui: event session.reclaimed: removed" in breaking.stdout
    assert "without raising schema_version's major part" in breaking.stderr

    stamp = (repo / "hermes_core/wire_stamp.py").read_text(encoding="utf-8")
    version = re.search(r'SCHEMA_VERSION = "(\d+)\.', stamp)
    assert version is not None
    major = int(version.group(1))
    _commit(
        repo,
        "hermes_core/wire_stamp.py",
        version.group(0),
        f'SCHEMA_VERSION = "{major + 1}.',
        "raise the major version",
    )
    allowed = _gate(repo, base)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert f"the major version was raised to {major + 1}" in allowed.stdout
