"""The kill -9 chaos tests on PostgreSQL: TUI over stdio and WebSocket, ACP through the SDK, API
runs and background responses; each server runs on its own schema (tests/tui/chaos_scenario.py,
tests/acp/chaos_scenario.py, tests/api/test_api_run_resume.py,
tests/api/test_api_responses_background.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import chaos
from tests.acp import chaos_scenario as acp_chaos
from tests.acp.conftest import Home, home, spawn  # noqa: F401 (fixtures)
from tests.api.conftest import BASE_CONFIG
from tests.api.test_api_responses_background import background_resumes_after_kill_9
from tests.api.test_api_run_resume import run_resumes_after_kill_9
from tests.tui import chaos_scenario as tui_chaos


def _storage(dsn: str) -> dict[str, Any]:
    return {"backend": "postgres", "dsn": dsn}


async def test_tui_stdio_resumes_after_kill_9_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    home_dir = tmp_path / "tui-home"
    await tui_chaos.run(home_dir, tui_chaos.stdio, _storage(pg_dsn), chaos.postgres_storage(pg_dsn))


async def test_tui_websocket_resumes_after_kill_9_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    home_dir = tmp_path / "tui-home"
    await tui_chaos.run(home_dir, tui_chaos.websocket, _storage(pg_dsn), chaos.postgres_storage(pg_dsn))


async def test_acp_load_after_kill_9_on_postgres(pg_dsn: str, spawn: Any, home: Home) -> None:  # noqa: F811
    await acp_chaos.run(spawn, home, _storage(pg_dsn), chaos.postgres_storage(pg_dsn))


async def test_acp_load_after_kill_9_before_the_first_token_on_postgres(
    pg_dsn: str,
    spawn: Any,  # noqa: F811
    home: Home,  # noqa: F811
) -> None:
    await acp_chaos.run_before_first_token(spawn, home, _storage(pg_dsn), chaos.postgres_storage(pg_dsn))


async def test_api_run_resumes_after_kill_9_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    config = BASE_CONFIG + chaos.postgres_storage(pg_dsn)
    await run_resumes_after_kill_9(tmp_path / "api-home", _storage(pg_dsn), config, shared=True)


async def test_api_background_response_resumes_after_kill_9_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    config = BASE_CONFIG + chaos.postgres_storage(pg_dsn)
    await background_resumes_after_kill_9(tmp_path / "api-home", _storage(pg_dsn), config, shared=True)
