"""One log filter masks secrets in every line a handler writes: message, traceback and stack."""

from __future__ import annotations

import io
import logging

from hermes_core import RedactingLogFilter, redact_log_handlers
from hermes_core.redaction import Redactor

SECRET = "hunter2-very-secret-value"


def _logger(stream: io.StringIO) -> logging.Logger:
    logger = logging.getLogger(f"test.redaction.{id(stream)}")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    return logger


def test_message_arguments_traceback_and_stack_are_masked() -> None:
    stream = io.StringIO()
    logger = _logger(stream)
    redactor = Redactor()
    redactor.add(SECRET)
    redact_log_handlers(redactor, logger)
    redact_log_handlers(redactor, logger)  # a second call adds nothing
    assert sum(isinstance(f, RedactingLogFilter) for f in logger.handlers[0].filters) == 1
    logger.warning("key is %s", SECRET)
    try:
        raise RuntimeError(f"upstream said {SECRET}")
    except RuntimeError:
        logger.exception("call failed")
    logger.warning("here", stack_info=True, extra={"unused": SECRET})
    written = stream.getvalue()
    assert SECRET not in written
    assert written.count("[REDACTED]") == 2
    assert "RuntimeError: upstream said [REDACTED]" in written
    assert "Stack (most recent call last)" in written


def test_a_record_with_a_broken_format_is_still_written() -> None:
    stream = io.StringIO()
    logger = _logger(stream)
    redact_log_handlers(Redactor(), logger)
    logger.handlers[0].handleError = lambda record: stream.write("handler error\n")  # type: ignore[method-assign]
    logger.warning("%d apples", "not a number")
    assert "handler error" in stream.getvalue()
