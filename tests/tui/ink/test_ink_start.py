"""Starting upstream's Ink TUI on our gateway: the banner and session panel, the first prompt, the
"Setup Required" panel without a model, and ``hermes --tui`` itself
(docs/protocols/tui-gateway.md#using-the-ink-tui).
"""

from __future__ import annotations

from pathlib import Path

from tests.tui.ink import bundle
from tests.tui.ink.bundle import skip_unless_wanted
from tests.tui.ink.contract import INK_TUI_METHODS, methods_called
from tests.tui.ink.screen import ink_config

pytestmark = skip_unless_wanted


def test_start_shows_the_session_panel_and_takes_a_prompt(ink, workspace: Path) -> None:
    tui = ink()
    screen = tui.ready()
    created = tui.recording.result_of("session.create")["result"]
    assert f"Session: {created['session_id']}" in screen
    assert "Available Tools" in screen and "terminal" in screen
    assert "mock:echo" in screen
    assert str(workspace)[-24:] in screen  # the gateway runs in the user's folder (long paths are cut)
    assert created["info"]["cwd"] == str(workspace)
    tui.submit("hello gateway")
    screen = tui.wait_for("You said: hello gateway")
    assert "error" not in screen.lower()
    # what reached the gateway: the prompt, checked for a dropped file first
    assert tui.recording.requests("input.detect_drop")[-1]["params"]["text"] == "hello gateway"
    assert tui.recording.requests("prompt.submit")[-1]["params"]["text"] == "hello gateway"
    assert tui.recording.errors() == []


def test_setup_required_without_a_model(ink, home: Path) -> None:
    ink_config(home, "")
    tui = ink()
    screen = tui.wait_for("Setup Required", timeout=40)
    assert "needs a model provider" in screen
    assert tui.recording.result_of("setup.status")["result"] == {"provider_configured": False}
    assert tui.recording.requests("session.create") == []
    # the way out the panel offers: /model, then a new session
    tui.submit("/model mock:echo")
    tui.wait_for("model → mock:echo")
    tui.submit("/new")
    tui.wait_for("Yes, start a new session")  # not the title: it follows a "⚠" (see approval_shown)
    tui.keys("y")
    tui.wait_request("session.create")
    screen = tui.wait_for(lambda s: "Session:" in s and "─ ready" in s, what="a session")
    assert "mock:echo" in screen
    assert tui.recording.result_of("setup.status")["result"] == {"provider_configured": True}
    assert tui.recording.errors() == []


def test_hermes_tui_starts_it_on_this_gateway(ink, workspace: Path, home: Path) -> None:
    tui = ink(via_hermes=True)
    screen = tui.ready()
    assert "mock:echo" in screen and str(workspace)[-24:] in screen
    tui.submit("via hermes --tui")
    tui.wait_for("You said: via hermes --tui")
    launchers = list((home / ".cache" / "hermes").glob("ink-gateway-*.sh"))
    assert len(launchers) == 1


def test_the_bundle_calls_no_method_we_leave_unanswered() -> None:
    """Every method name in the bundle is in the list the Node-less tests answer
    (tests/tui/test_ink_contract.py): a new one in another bundle fails here first."""
    source = bundle.entry_js().read_text(encoding="utf-8")
    called = methods_called(source)
    assert len(called) >= 70, "the bundle's calls were not found: has the bundle's shape changed?"
    assert sorted(called - set(INK_TUI_METHODS)) == []
