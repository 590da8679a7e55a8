"""``hermes run`` and ``hermes sessions``: one turn on the mock, stored and shown again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_core import Kernel
from tests.cli.cli_helpers import Hermes


def test_run_streams_only_the_reply_to_stdout(hermes: Hermes, home: Path) -> None:
    result = hermes("run", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "You said: hello\n"
    assert "mock:echo" in result.stderr  # the fallback is announced on stderr


def test_run_uses_the_process_cwd(hermes: Hermes, home: Path, tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    assert hermes("run", "--session", "cwd-check", "hi", cwd=work).returncode == 0
    shown = hermes("sessions", "show", "cwd-check")
    assert f"cwd:     {work.resolve()}" in shown.stdout


def test_session_continues_and_shows_both_turns(hermes: Hermes) -> None:
    first = hermes("run", "--session", "my-id", "first question")
    second = hermes("run", "--session", "my-id", "second question")
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    history = hermes("run", "--session", "my-id", "--model", "mock:history", "third")
    assert history.stdout == "Turns: first question | second question | third\n"

    shown = hermes("sessions", "show", "my-id")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "id:      my-id" in out and "source:  cli" in out and "profile: accept_edits" in out
    order = [
        out.index(t)
        for t in (
            "first question",
            "You said: first question",
            "second question",
            "You said: second question",
        )
    ]
    assert order == sorted(order)

    listed = hermes("sessions", "list", "--limit", "5")
    assert listed.returncode == 0 and "my-id" in listed.stdout


def test_unknown_session_show_exits_1(hermes: Hermes) -> None:
    result = hermes("sessions", "show", "nope")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("session not found: nope")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("bad", ["..", ".", "has space", "x" * 257, "slash/id"])
def test_bad_session_id_exits_2(hermes: Hermes, bad: str) -> None:
    result = hermes("run", "--session", bad, "hi")
    assert result.returncode == 2
    assert "invalid session id" in result.stderr and result.stdout == ""


def test_failed_turn_exits_nonzero_with_a_message(hermes: Hermes) -> None:
    result = hermes("run", "boom [[error upstream broke]]")
    assert result.returncode == 1
    assert "provider_error" in result.stderr and "upstream broke" in result.stderr


def test_truncated_reply_is_not_success(hermes: Hermes) -> None:
    result = hermes("run", "short [[finish length]]")
    assert result.returncode == 1
    assert result.stdout == "You said: short\n"
    assert "cut short" in result.stderr


def test_unreadable_database_is_one_line(hermes: Hermes, home: Path) -> None:
    (home / "hermes.sqlite3").write_bytes(b"this is not a sqlite database at all" * 100)
    result = hermes("run", "hi")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert str(home / "hermes.sqlite3") in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # the fallback notice, then the error
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(home / "hermes.sqlite3").execute("select * from sqlite_master").fetchall()


def _has_help_command() -> bool:
    kernel = Kernel.create(entry_points=["slash"], strict=False)
    return kernel.registry.command("help") is not None


def test_slash_prompt_is_dispatched(hermes: Hermes) -> None:
    assert _has_help_command(), "the slash plugin registers no /help command"
    result = hermes("run", "/help")
    assert result.returncode == 0, result.stderr
    assert "/help" in result.stdout and "You said" not in result.stdout
    plain = hermes("run", "/not-a-command at all")
    assert plain.stdout == "You said: /not-a-command at all\n"
    if Kernel.create(entry_points=["slash"]).registry.command("stop") is not None:
        stop = hermes("run", "/stop")
        assert stop.returncode == 1 and "/stop is not available here" in stop.stderr


def test_tool_activity_goes_to_stderr(hermes: Hermes, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    result = hermes("run", 'read it [[tool read_file {"path": "notes.txt"}]]', cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Done: ") and "remember the milk" in result.stdout
    assert "→ " in result.stderr and "✓ read_file" in result.stderr
    assert "read_file" not in result.stdout


def test_models_lists_the_catalog_with_the_current_model(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text('model = "mock:alt"\n')
    result = hermes("models")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("current model: mock:alt\n")
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert ["*", "mock", "alt", "32768", "no"] in [row[:5] for row in rows]
    assert any(row[:2] == ["mock", "echo"] for row in rows)
    refreshed = hermes("models", "--refresh")
    assert refreshed.returncode == 0 and "mock" in refreshed.stdout
