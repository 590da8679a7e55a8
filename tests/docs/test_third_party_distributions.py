"""Proof for third-party authors: the provider and the transport of docs/writing-providers.md and
docs/writing-transports.md, written out from the pages alone, pip-installed as real
distributions and driven over the real CLI (``hermes models``, ``hermes run``, ``hermes lines``)
and over ``hermes tui``."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_helpers import run_hermes
from tests.cli.test_cli_models_key_column import key_column
from tests.docs import snippets
from tests.tui.client import TuiProcess

WRITE = '[[tool write_file {"path": "out.txt", "content": "from lines"}]]'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Both distributions built from the docs and installed into one folder (for PYTHONPATH)."""
    root = tmp_path_factory.mktemp("dists")
    snippets.write("writing-providers.md", root / "hermes-parrot", only=("pyproject.toml", "hermes_parrot/"))
    snippets.write("writing-transports.md", root / "hermes-lines", only=("pyproject.toml", "hermes_lines/"))
    target = root / "site"
    # With setuptools and wheel at hand pip builds in place; otherwise in an isolated environment
    # (slower, and it fetches the build requirements from the package index).
    local = all(importlib.util.find_spec(name) for name in ("setuptools", "wheel"))
    fast = ["--no-build-isolation"] if local else []
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            *fast,
            "--target",
            str(target),
            str(root / "hermes-parrot"),
            str(root / "hermes-lines"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in target.glob("*.dist-info")) == [
        "hermes_lines-1.0.0.dist-info",
        "hermes_parrot-1.0.0.dist-info",
    ]
    yield target


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def hermes(home: Path, site: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return run_hermes(home, *args, pythonpath=[site], **kw)


def lines_run(
    home: Path, site: Path, workspace: Path, prompt: str, *flags: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``hermes lines FLAGS`` with ``prompt`` on stdin; return the process and its frames."""
    from tests.cli.cli_helpers import HERMES, clean_env

    result = subprocess.run(
        [HERMES, "lines", *flags],
        input=prompt + "\n",
        env=clean_env(home, env, [site]),
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    frames = [json.loads(line) for line in result.stdout.splitlines()]  # nothing but JSON lines
    return result, frames


def test_both_plugins_load(home: Path, site: Path) -> None:
    result = hermes(home, site, "plugins")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if line.strip()}
    assert rows["parrot"].split()[1:3] == ["1.0.0", "hermes-parrot"] and rows["parrot"].endswith("ok")
    assert rows["lines"].split()[1:3] == ["1.0.0", "hermes-lines"] and rows["lines"].endswith("ok")


def test_hermes_models_lists_the_parrot_needing_no_key(home: Path, site: Path) -> None:
    result = hermes(home, site, "models")
    assert result.returncode == 0, result.stderr
    assert key_column(result.stdout)[("parrot", "parrot-1")] == "not needed"
    assert "32768" in next(line for line in result.stdout.splitlines() if "parrot-1" in line)


def test_hermes_run_answers_with_the_parrot(home: Path, site: Path) -> None:
    page = "writing-providers.md"
    result = hermes(home, site, "run", "--model", "parrot:parrot-1", "good morning")
    assert result.returncode == 0, result.stderr
    assert result.stdout == snippets.console_output(page, 'hermes run --model parrot:parrot-1 "good morning"')
    # The provider's settings table reaches its factory.
    (home / "config.toml").write_text('model = "parrot:parrot-1"\n[providers.parrot]\nprefix = "Polly: "\n')
    result = hermes(home, site, "run", "crackers")
    assert (result.returncode, result.stdout) == (0, "Polly: crackers\n"), result.stderr
    refused = hermes(home, site, "run", "--model", "parrot:parrot-2", "hi")
    assert refused.returncode != 0 and "parrot:parrot-1" in refused.stderr


def test_the_parrot_answers_tui_prompts(home: Path, site: Path, tmp_path: Path) -> None:
    (home / "config.toml").write_text('model = "parrot:parrot-1"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hi\n")
    with TuiProcess(home, env={"PYTHONPATH": str(site)}, cwd=workspace) as tui:
        tui.wait_event("", "gateway.ready", timeout=30)
        sid = tui.create()
        done = tui.turn(sid, "hello from the tui", timeout=30)
        assert (done["status"], done["text"]) == ("complete", "hello from the tui")
        done = tui.turn(sid, "use list_dir", timeout=30)
        assert done["text"] == "list_dir said: README.md"
        started = tui.events(sid, "tool.start")
        assert [e["payload"]["name"] for e in started] == ["list_dir"]


def test_hermes_lines_denies_without_the_flag_and_approves_with_it(
    home: Path, site: Path, tmp_path: Path
) -> None:
    (home / "config.toml").write_text('model = "mock:echo"\n[lines]\ntag = "from-config"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result, frames = lines_run(home, site, workspace, WRITE)
    assert result.returncode == 0, result.stderr
    assert {f["tag"] for f in frames} == {"from-config"}
    assert frames[0]["type"] == "TurnStarted" and frames[-1]["type"] == "TurnCompleted"
    closed = [f for f in frames if f["type"] == "QuestionClosed"]
    assert [(c["reason"], c["choice"]) for c in closed] == [("no_answerer", "deny")]
    assert not (workspace / "out.txt").exists()

    result, frames = lines_run(home, site, workspace, WRITE, "--approve", env={"LINES_TAG": "from-env"})
    assert result.returncode == 0, result.stderr
    assert {f["tag"] for f in frames} == {"from-env"}
    closed = [f for f in frames if f["type"] == "QuestionClosed"]
    assert [(c["reason"], c["choice"]) for c in closed] == [("answered", "once")]
    assert (workspace / "out.txt").read_text() == "from lines"

    help_text = hermes(home, site, "lines", "--help").stdout
    assert "--approve / --no-approve" in help_text and "Approve every tool call" in help_text


def test_hermes_lines_speaks_for_the_parrot(home: Path, site: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result, frames = lines_run(home, site, workspace, "two plugins", env={"HERMES_MODEL": "parrot:parrot-1"})
    assert result.returncode == 0, result.stderr
    done = frames[-1]
    assert (done["type"], done["text"], done["outcome"]["reason"]) == ("TurnCompleted", "two plugins", "stop")
    assert done["tag"] == "lines"  # the settings model's default
