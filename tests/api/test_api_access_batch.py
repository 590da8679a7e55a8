"""The access log's lines leave in batches: one write to stderr for a window's requests, the
same text and order, nothing kept past the window or the server's stop
(plugins/hermes_api_server/access_log.py)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from hermes_api_server.access_log import BatchedAccessLog
from tests.timing import eventually


class CountingStream(io.StringIO):
    """A text stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, CountingStream, list[logging.LogRecord]]]:
    """A private ``parent.access`` logger whose parent has a stream handler and a record list."""
    parent = logging.getLogger("test_access_batch")
    stream = CountingStream()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    parent.addHandler(handler)
    parent.addHandler(Keep())
    parent.propagate = False
    child = logging.getLogger("test_access_batch.access")
    child.setLevel(logging.INFO)
    yield child, stream, seen
    parent.handlers.clear()


async def test_a_window_of_lines_is_one_write_with_the_same_text(
    logged: tuple[logging.Logger, CountingStream, list[logging.LogRecord]],
) -> None:
    logger, stream, seen = logged
    batch = BatchedAccessLog(logger, flush_s=0.01)
    batch.install()
    try:
        for i in range(5):
            logger.info("POST /v1/chat/completions %s", i)
        assert stream.writes == 0  # kept for the window, not written one by one
        await eventually(lambda: stream.writes > 0)
        assert stream.writes == 1
        assert stream.getvalue() == "".join(
            f"INFO test_access_batch.access: POST /v1/chat/completions {i}\n" for i in range(5)
        )
        assert [r.getMessage() for r in seen] == [f"POST /v1/chat/completions {i}" for i in range(5)]
    finally:
        batch.uninstall()
    assert logger.propagate


async def test_stopping_writes_what_is_pending(
    logged: tuple[logging.Logger, CountingStream, list[logging.LogRecord]],
) -> None:
    logger, stream, _ = logged
    batch = BatchedAccessLog(logger, flush_s=3600)
    batch.install()
    logger.info("GET /health 200")
    assert stream.getvalue() == ""
    batch.uninstall()
    assert stream.getvalue() == "INFO test_access_batch.access: GET /health 200\n"
    logger.info("after")  # propagation is back: written at once by the parent's handler
    assert stream.getvalue().endswith("INFO test_access_batch.access: after\n")


def test_without_a_running_loop_a_line_is_written_at_once(
    logged: tuple[logging.Logger, CountingStream, list[logging.LogRecord]],
) -> None:
    logger, stream, _ = logged
    batch = BatchedAccessLog(logger, flush_s=3600)
    batch.install()
    try:
        logger.info("one")
        assert stream.getvalue() == "INFO test_access_batch.access: one\n"
    finally:
        batch.uninstall()


async def test_the_window_starts_at_the_first_pending_line(
    logged: tuple[logging.Logger, CountingStream, list[logging.LogRecord]],
) -> None:
    logger, stream, _ = logged
    batch = BatchedAccessLog(logger, flush_s=0.01)
    batch.install()
    try:
        logger.info("a")
        await eventually(lambda: stream.writes == 1)
        logger.info("b")
        await eventually(lambda: stream.writes == 2)
        assert stream.getvalue().splitlines() == [
            "INFO test_access_batch.access: a",
            "INFO test_access_batch.access: b",
        ]
    finally:
        batch.uninstall()
