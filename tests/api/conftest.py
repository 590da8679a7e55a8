"""Fixtures for the API server tests: real ``hermes api`` subprocesses in a private HERMES_HOME."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.api_helpers import Server, start_server

BASE_CONFIG = """
[agent]
provider_retries = 0
[titles]
refine = false
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One shared server with the default settings (the mock provider, a generated key)."""
    home = tmp_path_factory.mktemp("home")
    srv = start_server(home, config=BASE_CONFIG)
    yield srv
    srv.stop()


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[object]:
    """Start servers with custom config; all are stopped at the end."""
    started: list[Server] = []

    def make(
        config: str = "", *args: str, env: dict[str, str] | None = None, home: Path | None = None
    ) -> Server:
        srv = start_server(
            home or tmp_path / f"home{len(started)}", *args, config=config + BASE_CONFIG, env=env
        )
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()
