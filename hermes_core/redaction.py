"""One redaction function for secrets in events, logs and errors (docs/reference/core.md#tools).

It masks well-known credential shapes and any exact value registered as a secret (the values of
credential settings). The core and every encoder apply the same function.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

MASK = "[REDACTED]"
_PATTERNS = re.compile(
    r"""
    sk-ant-[A-Za-z0-9_\-]{8,}            # Anthropic
  | sk-(?:proj-)?[A-Za-z0-9_\-]{16,}     # OpenAI and compatible
  | gh[pousr]_[A-Za-z0-9]{20,}           # GitHub tokens
  | AKIA[0-9A-Z]{16}                     # AWS access key id
  | xox[baprs]-[A-Za-z0-9\-]{10,}        # Slack
  | (?<=Bearer\ )[A-Za-z0-9._~+/\-]{12,}=*  # bearer tokens in headers or commands
    """,
    re.VERBOSE,
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with credential-looking substrings and known secret values masked.

    :param secrets: exact values to mask (values shorter than 6 characters are ignored, so
        that masking never shreds ordinary words).
    """
    if not text:
        return text
    for value in secrets:
        if value and len(value) >= 6 and value in text:
            text = text.replace(value, MASK)
    return _PATTERNS.sub(MASK, text)


class Redactor:
    """Holds the secret values of one kernel and redacts text with them."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def add(self, *values: str | None) -> None:
        """Register secret values (None and short values are ignored)."""
        for value in values:
            if value and len(value) >= 6:
                self._values.add(value)

    def __call__(self, text: str) -> str:
        return redact(text, self._values)

    def obj(self, value: object) -> object:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {k: self.obj(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.obj(v) for v in value]
        return value


class RedactingLogFilter(logging.Filter):
    """Mask secrets in a record's message, traceback and stack before a handler formats it.

    Put it on handlers (not loggers), so records propagated from every logger pass through it.
    """

    def __init__(self, redact: Callable[[str], str]) -> None:
        """:param redact: returns the text with secrets masked (a :class:`Redactor`, say)."""
        super().__init__()
        self._redact = redact
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's texts with their redacted versions; never drops a record."""
        try:
            message = record.getMessage()
        except Exception:
            return True  # a broken format string: the handler reports it as it always does
        record.msg, record.args = self._redact(message), None
        if record.exc_info and not record.exc_text:
            # Formatters use a ready exc_text instead of formatting the exception again.
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


def redact_log_handlers(redact: Callable[[str], str], logger: logging.Logger | None = None) -> None:
    """Filter every handler of ``logger`` (the root logger by default) through ``redact``, once.

    A handler that already has a :class:`RedactingLogFilter` is left as it is.
    """
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingLogFilter) for f in handler.filters):
            handler.addFilter(RedactingLogFilter(redact))
