"""Settings for every test: the per-test timeout stretches with ``HERMES_TEST_TIME_SCALE``."""

from __future__ import annotations

import pytest

from tests.timing import TIME_SCALE, scaled


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Scale pytest-timeout's limit (the ini value, ``--timeout`` or a test's own mark)."""
    if TIME_SCALE == 1:
        return
    base = config.getvalue("timeout") or config.getini("timeout") or 0
    for item in items:
        marker = item.get_closest_marker("timeout")
        seconds = float(marker.args[0]) if marker is not None and marker.args else float(base)
        if seconds:
            item.add_marker(pytest.mark.timeout(scaled(seconds)), append=False)
