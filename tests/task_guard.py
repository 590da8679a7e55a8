"""Fail the test during which asyncio reports a task (or future) exception nobody retrieved.

asyncio logs "Task exception was never retrieved" when a task that raised is garbage collected
without anyone having looked at its outcome: a failure that went nowhere. A handler on the
``asyncio`` logger collects those reports; after each test a collection of the young
generations brings out the tasks that test dropped, and the test fails with the report. A report
that only shows up later (a task that lived long enough to reach the oldest generation) fails
the test it shows up in, naming the task; one left at the very end fails the session.

``tests/conftest.py`` uses it for the whole suite; ``-p tests.task_guard`` loads it elsewhere.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

MARKERS = ("exception was never retrieved",)


class _Unretrieved(logging.Handler):
    """Keeps the asyncio reports of exceptions nobody retrieved."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.reports: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(marker in message for marker in MARKERS):
            context = getattr(record, "exc_info", None)
            detail = self.format(record) if context else message
            self.reports.append(detail)


_HANDLER = _Unretrieved()


def pytest_configure(config: pytest.Config) -> None:
    """Listen to asyncio's reports for the whole session."""
    logger = logging.getLogger("asyncio")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)


@pytest.fixture(autouse=True)
def no_unretrieved_task_exception() -> Iterator[None]:
    """Fail this test if a task exception went unretrieved while it ran."""
    _HANDLER.reports.clear()
    yield
    gc.collect(1)  # the tasks this test dropped are young: a cheap collection finds them
    reports, _HANDLER.reports[:] = list(_HANDLER.reports), []
    if reports:
        pytest.fail("asyncio reported an exception nobody retrieved:\n" + "\n".join(reports), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Collect everything once more; a report now fails the session."""
    gc.collect()
    if _HANDLER.reports:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "asyncio reported an exception nobody retrieved:\n" + "\n".join(_HANDLER.reports)
        if reporter is not None:
            reporter.write_line(text, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
