"""Questions as pi extension-UI dialogs (docs/reference/pi.md#questions-as-dialogs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.pi.client import PiProcess, write_config

CLARIFY = '[[tool clarify {"question": "Which one?", "choices": ["red", "blue"]}]]'


def ask(
    pi: PiProcess, prompt: str, answer: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Prompt, answer the first dialog with ``answer(request)``, return the run's records."""
    start = pi.mark()
    pi.call("prompt", message=prompt)
    request = pi.wait_type("extension_ui_request", 1, start)[0]
    pi.send({"type": "extension_ui_response", "id": request["id"], **answer(request)})
    pi.wait_type("agent_settled", 1, start)
    return pi.records[start:]


def result_text(records: list[dict[str, Any]]) -> str:
    return str(next(r for r in records if r["type"] == "tool_execution_end")["result"]["content"][0]["text"])


def test_clarify_with_choices_is_a_select(pi: PiProcess) -> None:
    records = ask(pi, f"x {CLARIFY}", lambda r: {"value": "blue"})
    request = next(r for r in records if r["type"] == "extension_ui_request")
    assert request["method"] == "select" and request["title"] == "Which one?"
    assert request["options"] == ["red", "blue"] and request["timeout"] == 300_000
    assert result_text(records) == "The user answered: blue"


def test_clarify_without_choices_is_an_input_and_cancel_is_no_answer(pi: PiProcess) -> None:
    records = ask(pi, 'x [[tool clarify {"question": "Name?"}]]', lambda r: {"cancelled": True})
    request = next(r for r in records if r["type"] == "extension_ui_request")
    assert request["method"] == "input" and request["title"] == "Name?"
    assert result_text(records) == "The user did not answer."
    records = ask(pi, 'y [[tool clarify {"question": "Name?"}]]', lambda r: {"value": "Ada"})
    assert result_text(records) == "The user answered: Ada"


def test_a_secret_is_an_input_and_is_stored(pi: PiProcess, home: Path) -> None:
    records = ask(pi, "x [[secret PI_TEST_TOKEN]]", lambda r: {"value": "tok-0123456789"})
    request = next(r for r in records if r["type"] == "extension_ui_request")
    assert request["method"] == "input" and request["placeholder"] == "PI_TEST_TOKEN"
    assert 'PI_TEST_TOKEN="tok-0123456789"' in (home / ".env").read_text()
    assert "tok-0123456789" not in result_text(records)


def test_an_approval_answered_with_confirm_or_an_option_not_offered(pi: PiProcess) -> None:
    guarded = 'x [[tool terminal {"command": "hermes-guard-test; echo ran-it"}]]'
    assert "ran-it" in result_text(ask(pi, guarded, lambda r: {"confirmed": True}))
    assert "ran-it" not in result_text(ask(pi, guarded, lambda r: {"value": "Allow everything forever"}))


def test_without_answerers_questions_close_at_once(spawn: Callable[..., PiProcess], home: Path) -> None:
    write_config(home, 'model = "mock:script"\n[pi]\nanswer = []\n')
    pi = spawn()
    records = pi.prompt_and_wait('x [[tool terminal {"command": "hermes-guard-test; echo ran-it"}]]')
    assert not [r for r in records if r["type"] == "extension_ui_request"]
    end = next(r for r in records if r["type"] == "tool_execution_end")
    assert end["isError"] is True and "nobody can be asked" in end["result"]["content"][0]["text"]
