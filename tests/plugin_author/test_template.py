"""The plugin template in docs/plugin-template: installed as its README says, its tests pass with
every warning an error (the storage conformance suite among them, run against its backend), and
the installed plugin loads in the real CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hermes_core.testing import storage_checks
from tests.cli.cli_helpers import run_hermes

from .snippets import DOCS, pip_install

TEMPLATE = DOCS / "plugin-template"


def test_the_template_tests_pass_without_warnings(tmp_path: Path) -> None:
    project = tmp_path / "hermes-notes"
    shutil.copytree(TEMPLATE, project, ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "site"
    pip_install(project, site)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "PYTHONPATH"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-W", "error", "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=project,
        env={**env, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    checks = len(storage_checks())
    assert summary.startswith(f"{5 + checks + 1} passed") and "warning" not in summary, result.stdout
    assert result.stdout.count("PASSED tests/test_plugin.py::") == 5
    assert result.stdout.count("PASSED tests/test_storage.py::test_the_snapshot_backend_conforms[") == checks

    home = tmp_path / "home"
    home.mkdir()
    listed = run_hermes(home, "plugins", env={"PYTHONPATH": str(site)})
    row = next(line for line in listed.stdout.splitlines() if line.startswith("notes "))
    assert "hermes-notes" in row and "slash_commands, storage_backends, tools" in row and row.endswith("ok")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ran = run_hermes(
        home,
        "run",
        '[[tool add_note {"text": "from the CLI"}]]',
        env={"PYTHONPATH": str(site), "HERMES_MODEL": "mock:echo"},
        cwd=workspace,
    )
    assert ran.returncode == 0 and ran.stdout == "Done: noted in NOTES.md\n", ran.stderr
    shown = run_hermes(home, "run", "/notes", env={"PYTHONPATH": str(site)}, cwd=workspace)
    assert shown.stdout == "- from the CLI\n", shown.stderr
