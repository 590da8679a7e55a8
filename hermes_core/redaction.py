"""One redaction function for secrets in events, logs and errors (docs/reference/core.md#tools).

It masks well-known credential shapes and any exact value registered as a secret (the values of
credential settings). The core and every encoder apply the same function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
