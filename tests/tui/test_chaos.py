"""kill -9 of ``hermes tui`` mid-turn on SQLite, over stdio and over WebSocket: the client resumes
from its cursor through the event log (tests/tui/chaos_scenario.py)."""

from __future__ import annotations

from pathlib import Path

from tests import chaos
from tests.tui import chaos_scenario


async def test_stdio_client_resumes_after_kill_9(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await chaos_scenario.run(home, chaos_scenario.stdio, chaos.sqlite_storage(home))


async def test_websocket_client_resumes_after_kill_9(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await chaos_scenario.run(home, chaos_scenario.websocket, chaos.sqlite_storage(home))
