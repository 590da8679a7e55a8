"""Settings for every test: the per-test timeout stretches with ``HERMES_TEST_TIME_SCALE``, and a
task exception nobody retrieved fails the test."""

from __future__ import annotations

import pytest

# Every test fails when asyncio reports a task exception nobody retrieved (tests/task_guard.py).
from tests.task_guard import no_unretrieved_task_exception, pytest_configure, pytest_sessionfinish  # noqa: F401
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
