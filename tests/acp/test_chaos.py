"""kill -9 of ``hermes acp`` mid-turn on SQLite; ``session/load`` in a new agent gives the cut-off
reply its explicit end (tests/acp/chaos_scenario.py)."""

from __future__ import annotations

from typing import Any

from tests import chaos
from tests.acp import chaos_scenario
from tests.acp.conftest import Home


async def test_load_after_kill_9_ends_the_cut_off_turn(spawn: Any, home: Home) -> None:
    await chaos_scenario.run(spawn, home, chaos.sqlite_storage(home.path))


async def test_load_after_kill_9_before_the_first_token_ends_the_turn(spawn: Any, home: Home) -> None:
    await chaos_scenario.run_before_first_token(spawn, home, chaos.sqlite_storage(home.path))
