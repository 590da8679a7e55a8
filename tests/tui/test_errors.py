"""The standalone ``error`` event: failures outside a turn reach the host
(docs/reference/tui-gateway.md#events)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.cli.cli_helpers import write_distribution
from tests.tui.client import TuiProcess, write_config

FAILING_OBSERVER = '''
"""A plugin whose event observer always fails."""
from hermes_core import hookimpl


@hookimpl
def hermes_on_event(session, event):
    raise RuntimeError("observer exploded")
'''


def test_missing_provider_key_is_an_error_event_after_create(
    spawn: Callable[..., TuiProcess], home: Path
) -> None:
    """A session whose provider has no API key gets ``error {code:"provider_auth"}`` right away."""
    write_config(home, 'model = "openai:gpt-4o-mini"\n')
    tui = spawn()
    sid = tui.create()
    error = tui.wait_event(sid, "error")
    assert error["payload"]["code"] == "provider_auth"
    assert "OPENAI_API_KEY" in error["payload"]["message"]
    # It does not replace the turn's own ending: a prompt still gets one message.complete.
    tui.call("prompt.submit", session_id=sid, text="hello")
    done = tui.wait_complete(sid)
    assert done["status"] == "error"
    assert len(tui.events(sid, "message.start")) == 1
    # Every new session with the same problem says so too.
    other = tui.create()
    assert tui.wait_event(other, "error")["payload"]["code"] == "provider_auth"


def test_configured_provider_gives_no_error_event(tui: TuiProcess) -> None:
    """The mock needs no key: no ``error`` event, before or after a turn."""
    sid = tui.create()
    tui.turn(sid, "fine")
    assert tui.events(sid, "error") == []


def test_a_failing_plugin_is_reported_once_and_the_turn_completes(
    spawn: Callable[..., TuiProcess], tmp_path: Path
) -> None:
    """A plugin observer that raises on every event gives one ``error {code:"plugin"}`` per session."""
    root = write_distribution(
        tmp_path / "dist",
        "throwaway-observer",
        {"throwaway_observer": FAILING_OBSERVER},
        {"observer": "throwaway_observer"},
    )
    tui = spawn(env={"PYTHONPATH": str(root)})
    sid = tui.create()
    done = tui.turn(sid, "still works")
    assert done["status"] == "complete" and done["text"] == "You said: still works"
    tui.turn(sid, "twice")
    errors = tui.events(sid, "error")
    assert len(errors) == 1, errors
    payload = errors[0]["payload"]
    assert payload["code"] == "plugin"
    assert "observer" in payload["message"] and "observer exploded" in payload["message"]
    assert "seq" in errors[0]
