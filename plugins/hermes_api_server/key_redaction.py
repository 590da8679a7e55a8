"""Keep the server's own API keys out of every log line, response and stored row.

The keys join the kernel's redactor, the one the core already applies to provider errors, tool
output and turn outcomes, so any text that quotes a key is masked before it reaches the API's
encoders. The same redactor filters every log handler of the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_api_server.keys import KeyRing
    from hermes_core import Kernel


class RedactingFilter(logging.Filter):
    """Mask secrets in a record's message, traceback and stack before a handler formats it."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        """Create the filter.

        :param redact: returns the text with secrets masked.
        """
        super().__init__()
        self._redact = redact
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's texts with their redacted versions.

        :param record: the record (modified in place).
        :returns: always ``True``.
        """
        try:
            message = record.getMessage()
        except Exception:
            return True
        record.msg, record.args = self._redact(message), None
        if record.exc_info and not record.exc_text:
            # Formatters use a ready exc_text instead of formatting the exception again.
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


def protect_keys(kernel: Kernel, keyring: KeyRing) -> None:
    """Register the keys as secrets and filter every handler of the root logger with them.

    :param kernel: the kernel whose redactor the core and this plugin use.
    :param keyring: the keys this server accepts.
    """
    kernel.redactor.add(*(key.decode("utf-8") for key in keyring.keys))
    root = logging.getLogger()
    for handler in root.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter(kernel.redactor))
