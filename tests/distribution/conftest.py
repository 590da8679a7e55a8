"""One build of this project per test session, shared by every distribution test (they are slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.distribution import builds


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> builds.Built:
    """The sdist and the wheel (built from the sdist) of this checkout."""
    return builds.build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="session")
def wheelhouse(built: builds.Built) -> Path:
    """Every dependency of every extra as wheels, cached under ``.ci/wheelhouse``."""
    return builds.wheelhouse(built)


@pytest.fixture(scope="session")
def upstream() -> Path:
    """Upstream's ``hermes-agent`` wheel, cached under ``.ci/upstream``."""
    return builds.upstream_wheel()
