"""``hermes tui`` and the one "no model configured" rule: fallback said once; a missing key at start."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tests.tui.client import TuiProcess, write_config


def _stderr_with(tui: TuiProcess, text: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while text not in tui.stderr_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return tui.stderr_text()


def test_no_model_configured_uses_the_fallback_and_says_so_once(
    home: Path, spawn: Callable[..., TuiProcess]
) -> None:
    write_config(home, "")
    tui = spawn()
    sid = tui.create()
    assert tui.call("session.status", session_id=sid)["model"] == "mock:echo"
    tui.turn(sid, "hello")
    assert _stderr_with(tui, "no model configured").count("no model configured") == 1


def test_missing_key_is_reported_at_start(home: Path, spawn: Callable[..., TuiProcess]) -> None:
    write_config(home, 'model = "openai:gpt-4.1"\n')
    tui = spawn()
    tui.wait_event("", "gateway.ready", timeout=20)
    stderr = _stderr_with(tui, "cannot answer yet")
    assert "model openai:gpt-4.1 cannot answer yet: provider 'openai' has no API key" in stderr
