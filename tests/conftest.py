"""Settings for every test: the per-test timeout stretches with ``HERMES_TEST_TIME_SCALE``; a
task exception nobody retrieved, or a frame off the schema export, fails the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import wire_check

# Every test fails when asyncio reports a task exception nobody retrieved (tests/task_guard.py).
from tests.task_guard import no_unretrieved_task_exception, pytest_configure, pytest_sessionfinish  # noqa: F401
from tests.timing import TIME_SCALE, scaled


@pytest.fixture(autouse=True)
def frames_follow_the_schema() -> Iterator[None]:
    """Fail a test when a frame a server sent during it departs from the schema export.

    The test clients report frames to :mod:`tests.wire_check` (docs/integrating.md); a violation
    is raised here, after the test, so that frames read on a client's thread count too.
    """
    wire_check.take()  # what arrived between tests belongs to no test
    yield
    found = wire_check.take()
    if found:
        pytest.fail("frames that do not follow the schema export:\n" + "\n".join(found[:20]), pytrace=False)


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
