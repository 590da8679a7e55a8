"""The new commands through the real ``hermes run --session ID "/command"`` (a subprocess each).

Sessions persist in the SQLite file under ``HERMES_HOME``, so each run sees what the last one
left, as a user's successive shell commands would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import hermes_core

HERMES = shutil.which("hermes", path=str(Path(sys.executable).parent))
SESSION = "slash-cli-test"


def hermes_run(
    home: Path, prompt: str, session: str = SESSION, model: str | None = "mock:echo"
) -> subprocess.CompletedProcess[str]:
    """Run ``hermes run --session SESSION PROMPT`` in a clean environment rooted at ``home``.

    ``model`` becomes ``HERMES_MODEL``; None leaves the model to ``config.toml`` (or the fallback).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "ANTHROPIC_"))}
    env.pop("PYTHONPATH", None)
    env.update({"HERMES_HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")})
    if model is not None:
        env["HERMES_MODEL"] = model
    assert HERMES is not None
    return subprocess.run(
        [HERMES, "run", "--session", session, prompt],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """Return stdout of a run that must have succeeded."""
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_undo_history_and_retry_across_runs(tmp_path: Path) -> None:
    assert ok(hermes_run(tmp_path, "first")) == "You said: first\n"
    assert ok(hermes_run(tmp_path, "second")) == "You said: second\n"
    assert ok(hermes_run(tmp_path, "/undo")) == (
        "Removed your last message and what followed (2 messages): second\n"
    )
    assert ok(hermes_run(tmp_path, "/history")) == "You: first\nHermes: You said: first\n"
    # mock:history replies with the user turns it was sent: the undone one is gone.
    assert ok(hermes_run(tmp_path, "/model mock:history")).startswith("Model switched to mock:history")
    assert ok(hermes_run(tmp_path, "what do you see")) == "Turns: first | what do you see\n"
    assert ok(hermes_run(tmp_path, "/undo")).endswith("(2 messages): what do you see\n")
    assert ok(hermes_run(tmp_path, "/model mock:echo")).startswith("Model switched to mock:echo")
    # /retry removes "first" and runs it again as a new turn, streamed like any reply.
    assert ok(hermes_run(tmp_path, "/retry")) == "You said: first\n"
    assert ok(hermes_run(tmp_path, "/history")) == "You: first\nHermes: You said: first\n"


def test_queue_and_steer_are_not_available_on_the_cli(tmp_path: Path) -> None:
    for text in ("/queue later", "/steer go left"):
        result = hermes_run(tmp_path, text)
        assert result.returncode != 0
        assert result.stdout == ""
        assert f"{text.split()[0]} is not available here (cli)" in result.stderr


def test_approvals_and_version_on_the_cli(tmp_path: Path) -> None:
    assert ok(hermes_run(tmp_path, "hello")) == "You said: hello\n"
    assert ok(hermes_run(tmp_path, "/approvals ask_everything")).startswith(
        "Approval profile set to ask_everything"
    )
    # The profile is stored with the session, so the next run (which asks for accept_edits) keeps it.
    assert ok(hermes_run(tmp_path, "/approvals")).startswith("Approval profile: ask_everything\n")
    assert ok(hermes_run(tmp_path, "/version")) == f"Hermes {hermes_core.__version__}\n"
    assert ok(hermes_run(tmp_path, "/help regenerate")).startswith(
        "/retry\n  Remove your last message and what followed, then send it again\n  Aliases: /regenerate\n"
    )
    assert ok(hermes_run(tmp_path, "/reload-mcp")) == (
        "No MCP servers are configured ([mcp_servers] in config.toml).\n"
    )


def test_model_global_is_saved_for_later_sessions(tmp_path: Path) -> None:
    switched = hermes_run(tmp_path, "/model mock:alt --global", model=None)
    assert ok(switched) == "Model switched to mock:alt (this session, and saved as the default model)\n"
    assert 'model = "mock:alt"' in (tmp_path / "config.toml").read_text(encoding="utf-8")
    assert ok(hermes_run(tmp_path, "hello", session="another", model=None)) == "alt: You said: hello\n"
    unknown = hermes_run(tmp_path, "/model mock:nope", session="another", model=None)
    assert unknown.returncode != 0 and unknown.stdout == ""
    assert 'model = "mock:alt"' in (tmp_path / "config.toml").read_text(encoding="utf-8")
