"""The plugin examples of the docs, built and pip-installed as their own distributions.

``docs/writing-plugins.md`` (``hermes-wordcount``: a ``/wc`` command, a tool and a policy) and
``docs/writing-tools.md`` (``hermes-todos``: a search tool with progress) are copied file by file
out of the pages (:mod:`tests.plugin_author.snippets`), installed with pip into a folder on
``PYTHONPATH``, and driven over the real ``hermes`` CLI and a real ``hermes tui`` subprocess.
The wordcount page's own tests run too, with every warning an error.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_helpers import run_hermes
from tests.tui.client import TuiProcess

from .snippets import doc_files, pip_install, write_tree


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build both distributions from the docs and install them into one ``site`` folder."""
    root = tmp_path_factory.mktemp("doc-plugins")
    site = root / "site"
    projects = {
        "wordcount": write_tree(doc_files("writing-plugins.md"), root / "hermes-wordcount"),
        "todos": write_tree(doc_files("writing-tools.md"), root / "hermes-todos"),
    }
    for project in projects.values():
        pip_install(project, site)
    return {"site": site, **projects}


@pytest.fixture
def places(tmp_path: Path, built: dict[str, Path]) -> tuple[Path, Path, dict[str, str]]:
    """A HERMES_HOME, a workspace with text in it, and the environment finding the plugins."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "mock:echo"\n\n[titles]\nrefine = false\n', encoding="utf-8")
    workspace = tmp_path / "ws"
    (workspace / "src" / "sub").mkdir(parents=True)
    (workspace / "notes.txt").write_text("one two three\nfour\n", encoding="utf-8")
    (workspace / "src" / "a.py").write_text("x = 1  # TODO: name it\nok = 2\n", encoding="utf-8")
    (workspace / "src" / "sub" / "b.md").write_text("# Notes\n\nTODO write more\n", encoding="utf-8")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "far.txt").write_text("TODO from afar\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("not yours\n", encoding="utf-8")
    return home, workspace.resolve(), {"PYTHONPATH": str(built["site"])}


def test_both_distributions_load(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, workspace, env = places
    result = run_hermes(home, "plugins", "--check", env=env, cwd=workspace)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr
    listed = run_hermes(home, "plugins", env=env, cwd=workspace).stdout
    rows = {line.split()[0]: line for line in listed.splitlines()[1:]}
    assert "hermes-wordcount" in rows["wordcount"] and rows["wordcount"].endswith("ok")
    assert "before_tool_call, slash_commands, tools" in rows["wordcount"]
    assert "hermes-todos" in rows["todos"] and rows["todos"].endswith("ok")


def test_the_wordcount_tests_from_the_docs_pass_without_warnings(built: dict[str, Path]) -> None:
    project = built["wordcount"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "error", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        env={**_plain_env(), "PYTHONPATH": str(built["site"])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("5 passed"), result.stdout
    assert "warning" not in result.stdout.lower()


def test_the_slash_command_over_the_cli(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, workspace, env = places
    counted = run_hermes(home, "run", "/wc notes.txt", env=env, cwd=workspace)
    assert counted.returncode == 0 and counted.stdout == "notes.txt: 4 words, 2 lines\n", counted.stderr
    for path in ("/etc/passwd", "../secret.txt"):
        refused = run_hermes(home, "run", f"/wc {path}", env=env, cwd=workspace)
        assert refused.returncode == 2 and refused.stdout == ""
        assert f"Error: path is outside the workspace: {path}" in refused.stderr
    bare = run_hermes(home, "run", "/wc", env=env, cwd=workspace)
    assert bare.returncode == 2 and "Error: /wc needs a file; usage: /wc PATH" in bare.stderr


def test_the_tools_over_the_cli(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, workspace, env = places
    words = run_hermes(home, "run", '[[tool word_count {"path": "notes.txt"}]]', env=env, cwd=workspace)
    assert words.returncode == 0 and words.stdout == "Done: 4 words, 2 lines\n", words.stderr
    todos = run_hermes(home, "run", '[[tool find_todos {"path": "src"}]]', env=env, cwd=workspace)
    assert todos.returncode == 0 and todos.stdout == "Done: a.py:1: x = 1  # TODO: name it\n", todos.stderr
    # Outside the workspace the approval step asks; `hermes run` cannot answer, so it is denied.
    far = run_hermes(home, "run", '[[tool find_todos {"path": "../elsewhere"}]]', env=env, cwd=workspace)
    assert (
        far.returncode == 0
        and "denied without running" in far.stdout
        and "afar" not in far.stdout + far.stderr
    )


@pytest.fixture
def tui(places: tuple[Path, Path, dict[str, str]]) -> Iterator[TuiProcess]:
    home, workspace, env = places
    proc = TuiProcess(home, env=env, cwd=workspace)
    try:
        proc.wait_event("", "gateway.ready", timeout=20)
        yield proc
    finally:
        proc.close()


def _tool_result(tui: TuiProcess, sid: str, name: str) -> dict[str, object]:
    done = [e["payload"] for e in tui.events(sid, "tool.complete") if e["payload"]["name"] == name]
    assert done, tui.events(sid)
    return done[-1]


def test_the_command_and_the_tools_over_the_tui(
    tui: TuiProcess, places: tuple[Path, Path, dict[str, str]]
) -> None:
    _home, workspace, _env = places
    sid = tui.create(cwd=str(workspace))
    answer = tui.call("command.dispatch", session_id=sid, command="/wc notes.txt")
    assert answer == {"type": "exec", "output": "notes.txt: 4 words, 2 lines"}
    refused = tui.error("command.dispatch", session_id=sid, command="/wc ../secret.txt")
    assert "outside the workspace: ../secret.txt" in refused.message

    tui.turn(sid, '[[tool word_count {"path": "notes.txt"}]]')
    assert _tool_result(tui, sid, "word_count")["result"] == "4 words, 2 lines"

    tui.turn(sid, '[[tool find_todos {"path": "src"}]]')
    assert _tool_result(tui, sid, "find_todos")["result"] == (
        "a.py:1: x = 1  # TODO: name it\nsub/b.md:3: TODO write more"
    )
    progress = [e["payload"]["preview"] for e in tui.events(sid, "tool.progress")]
    assert progress and progress[-1] == "a.py\nsub/b.md\n"


def test_a_path_outside_is_asked_about_over_the_tui(
    tui: TuiProcess, places: tuple[Path, Path, dict[str, str]]
) -> None:
    _home, workspace, _env = places
    sid = tui.create(cwd=str(workspace))
    tui.call("prompt.submit", session_id=sid, text='[[tool find_todos {"path": "../elsewhere"}]]')
    ask = tui.wait_event(sid, "approval.request", timeout=20)["payload"]
    assert ask["tool_name"] == "find_todos"
    assert tui.call("approval.respond", session_id=sid, request_id=ask["request_id"], choice="once") == {
        "resolved": 1
    }
    tui.wait_complete(sid, timeout=20)
    assert _tool_result(tui, sid, "find_todos")["result"] == "far.txt:1: TODO from afar"


def _plain_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "PYTHONPATH"))}
