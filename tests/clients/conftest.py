"""Fixtures for the generated clients' tests: the client package on ``sys.path``, one fresh
generation from a real ``hermes schema export`` per session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.client_installs import cache_root

REPO = Path(__file__).resolve().parents[2]
CLIENT_SRC = REPO / "clients" / "python"
if str(CLIENT_SRC) not in sys.path:
    sys.path.insert(0, str(CLIENT_SRC))


@pytest.fixture(scope="session")
def node_tools() -> Path:
    """The pinned npm generators and ``tsc`` (installed once into the client cache, ``.ci/clients``)."""
    from tools.gen_clients import GenerateError, node_tools

    try:
        return node_tools(cache_root() / "ts-gen")
    except GenerateError as exc:
        pytest.fail(f"the TypeScript generators could not be installed: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory, node_tools: Path) -> Iterator[Path]:
    """Export the schema with the real command, then generate every client from it into a temp folder."""
    from tools.gen_clients import GenerateError, export, generate

    root = tmp_path_factory.mktemp("generated")
    try:
        schema = export(root / "schema")
        generate(schema, root / "clients", node_tools.parents[1])
    except GenerateError as exc:
        pytest.fail(f"generating the clients failed: {exc}", pytrace=False)
    yield root / "clients"
