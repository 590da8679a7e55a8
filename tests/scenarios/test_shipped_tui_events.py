"""The shipped scenarios make every event of the TUI gateway's catalog happen on a real
``hermes tui`` (docs/reference/scenarios.md#shipped-scenarios), apart from the few no
conversation can cause, each named here with the reason. The core's closed event union is
checked in process by tests/scenarios/test_shipped_deterministic.py."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from hermes_core.scenarios import shipped
from hermes_tui_gateway.wire import EVENTS
from tests.cli.cli_helpers import HERMES, clean_env

HOST = Path(__file__).resolve().parents[2] / "docs" / "examples" / "host-python" / "host.py"

#: TUI events no scenario can cause, and why (the same list is in docs/reference/scenarios.md).
NOT_FROM_A_CONVERSATION = {
    "session.reclaimed": "an orphaned session is reclaimed after its connection went away",
    "session.gap": "a replay asks for events the log no longer holds",
    "approval.expire": "a question nobody answered in time; with expect enforced the turn fails",
    "clarify.expire": "a question nobody answered in time; with expect enforced the turn fails",
    "sudo.expire": "a question nobody answered in time; with expect enforced the turn fails",
    "secret.expire": "a question nobody answered in time; with expect enforced the turn fails",
    "sudo.request": "asked only where sudo needs a password, which depends on the machine",
    "secret.request": "request_secret stores the value in the user's config, outside a test's reach",
}


def _host(monkeypatch: pytest.MonkeyPatch, home: Path) -> Any:
    for key, value in clean_env(home, {"HERMES": HERMES}).items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("HERMES_") and k != "HERMES_HOME"]:
        monkeypatch.delenv(key)
    spec = importlib.util.spec_from_file_location("example_host", HOST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_scenarios_make_every_tui_event_happen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    host = _host(monkeypatch, tmp_path)
    seen: set[str] = set()
    original = host.Gateway.next

    def next_frame(gw: Any) -> dict[str, Any]:
        frame: dict[str, Any] = original(gw)
        if frame.get("method") == "event":
            seen.add(frame["params"]["type"])
        return frame

    monkeypatch.setattr(host.Gateway, "next", next_frame)
    for path in shipped():
        host.run_scenario(str(path))
    assert set(NOT_FROM_A_CONVERSATION) <= set(EVENTS)
    missing = set(EVENTS) - set(NOT_FROM_A_CONVERSATION) - seen
    assert not missing, f"no shipped scenario makes these TUI events happen: {sorted(missing)}"
