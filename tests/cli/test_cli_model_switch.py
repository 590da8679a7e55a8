"""``/model`` through ``hermes run``: a switch on a brand-new session survives to its next run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.cli.cli_helpers import Hermes


def _stored_session(home: Path, session_id: str) -> tuple[str | None, str | None, int]:
    with sqlite3.connect(home / "hermes.sqlite3") as db:
        row = db.execute("SELECT model, title FROM sessions WHERE id = ?", (session_id,)).fetchone()
        count = db.execute("SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
    assert row is not None, f"session {session_id} was not stored"
    return row[0], row[1], count[0]


def test_model_set_before_the_first_turn_is_used_by_the_next_run(hermes: Hermes, home: Path) -> None:
    switched = hermes("run", "--session", "fresh-one", "/model mock:alt")
    assert switched.returncode == 0, switched.stderr
    assert switched.stdout == "Model switched to mock:alt (this session)\n"
    assert _stored_session(home, "fresh-one") == ("mock:alt", None, 0)

    turn = hermes("run", "--session", "fresh-one", "hello there")
    assert turn.returncode == 0, turn.stderr
    assert turn.stdout == "alt: You said: hello there\n"

    shown = hermes("sessions", "show", "fresh-one")
    assert shown.returncode == 0, shown.stderr
    assert "mock:alt" in shown.stdout
    # The title a first turn derives is still stored although the record existed before it.
    assert _stored_session(home, "fresh-one")[1] == "hello there"


def test_unknown_model_on_a_new_session_stores_nothing(hermes: Hermes, home: Path) -> None:
    hermes("run", "--session", "other", "hi")  # creates the database
    failed = hermes("run", "--session", "never-made", "/model mock:nonsense")
    assert failed.returncode == 2
    assert "unknown model" in failed.stderr and failed.stdout == ""
    with sqlite3.connect(home / "hermes.sqlite3") as db:
        found = db.execute(
            "SELECT count(*) FROM sessions WHERE id = 'never-made' AND NOT placeholder"
        ).fetchone()
    assert found[0] == 0


def test_once_switch_in_a_one_shot_run_warns_that_it_cannot_last(hermes: Hermes) -> None:
    result = hermes("run", "--session", "once-only", "/model --once mock:alt")
    assert result.returncode == 0, result.stderr
    assert "hermes run --model" in result.stderr
    assert hermes("run", "--session", "once-only", "hi").stdout == "You said: hi\n"


def test_no_model_configured_is_said_once_and_answers_with_the_fallback(hermes: Hermes) -> None:
    result = hermes("run", "hi")
    assert result.returncode == 0 and result.stdout == "You said: hi\n"
    assert result.stderr.count("no model configured") == 1
    assert "offline mock model mock:echo" in result.stderr


def test_configured_provider_without_key_is_reported_before_the_request(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text('model = "openai:gpt-4.1"\n')
    result = hermes("run", "hi")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if "model openai:gpt-4.1 cannot answer yet" in line)
    assert "OPENAI_API_KEY" in lines[start]
    assert any(line.startswith("Error: ") for line in lines[start + 1 :])
