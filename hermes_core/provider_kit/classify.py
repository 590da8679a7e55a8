"""Turn HTTP error statuses and in-stream errors into ``ProviderError``.

Every message names the provider and says what went wrong in words a user can act on; it is
passed through a :class:`~hermes_core.provider_kit.messages.Redactor` so the API key (and URL
credentials) never appear in it. What vendors say differently enters through two hooks: the
error codes of a 429 that mean an exhausted quota, and how an in-stream error is read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_core.errors import ProviderError, ProviderErrorKind
from hermes_core.provider_kit.messages import (
    Redactor,
    detail_from_payload,
    display_url,
    error_detail,
    parse_retry_after,
)


@dataclass(frozen=True, slots=True)
class StreamFault:
    """How a vendor reads an error that arrived inside a stream.

    :param kind: the error kind (``rate_limit``, ``auth`` or ``upstream``).
    :param retryable: whether the core may try the call again.
    :param status: the HTTP status the error carried, if any.
    :param tag: shown in brackets after "upstream error mid-stream" (e.g. the error type).
    """

    kind: ProviderErrorKind
    retryable: bool
    status: int | None = None
    tag: str | None = None


StreamFaultReader = Callable[[Any, Any], StreamFault]
"""A vendor hook: given an in-stream error payload and its code, say what kind of failure it is."""


class ErrorFactory:
    """Build the ``ProviderError`` of one provider instance.

    :param label: the provider name shown first in every message.
    :param url: the endpoint root, shown (without credentials) in network messages.
    :param redact: removes secrets from every message.
    :param key_hint: what to set when no key is configured (e.g. ``OPENAI_API_KEY``).
    :param has_key: whether an API key is configured.
    :param stream_fault: the vendor's reading of an error received inside a stream.
    :param quota_codes: error codes of a 429 that mean an exhausted quota (not retried).
    """

    def __init__(
        self,
        label: str,
        url: str,
        redact: Redactor,
        key_hint: str | None,
        has_key: bool,
        *,
        stream_fault: StreamFaultReader,
        quota_codes: Collection[str] = (),
    ) -> None:
        self.label = label
        self.url = display_url(url)
        self.redact = redact
        self.key_hint = key_hint
        self.has_key = has_key
        self._stream_fault = stream_fault
        # A tuple compares with ==, so an unhashable code from an odd body cannot raise.
        self._quota_codes = tuple(quota_codes)

    def make(
        self,
        kind: ProviderErrorKind,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> ProviderError:
        """Return a ``ProviderError`` whose message is labelled and redacted."""
        return ProviderError(
            kind,
            self.redact(f"{self.label}: {message}"),
            retryable=retryable,
            retry_after=retry_after,
            status=status,
        )

    def from_status(self, status: int, reason: str, body: bytes, headers: Mapping[str, str]) -> ProviderError:
        """Map an HTTP error response to an error kind (401/403 auth, 429, 5xx, other 4xx).

        :param reason: the status line's reason phrase (may be empty).
        :param body: the start of the response body, for the upstream's own message.
        :param headers: the response headers, for ``Retry-After``.
        """
        detail, code = error_detail(body)
        said = f": {detail}" if detail else ""
        head = f"HTTP {status}{' ' + reason if reason else ''}"
        if status in (401, 403):
            hint = ""
            if not self.has_key:
                hint = f" (no API key is configured; set {self.key_hint})" if self.key_hint else ""
            return self.make("auth", f"authentication failed ({head}){said}{hint}", status=status)
        if status == 429 or status >= 500:
            limited = status == 429
            # An exhausted quota will not come back by waiting a few seconds.
            exhausted = limited and code in self._quota_codes
            return self.make(
                "rate_limit" if limited else "upstream",
                f"{'rate limited' if limited else 'upstream error'} ({head}){said}",
                retryable=not exhausted,
                retry_after=parse_retry_after(headers),
                status=status,
            )
        return self.make("upstream", f"request rejected ({head}){said}", status=status)

    def from_stream_error(self, payload: Any) -> ProviderError:
        """Map an error received inside the event stream, as the vendor's hook reads it."""
        detail, code = detail_from_payload(payload)
        fault = self._stream_fault(payload, code)
        if fault.kind == "rate_limit":
            text = f"rate limited mid-stream: {detail}"
        elif fault.kind == "auth":
            text = f"authentication failed mid-stream: {detail}"
        else:
            text = f"upstream error mid-stream{f' ({fault.tag})' if fault.tag else ''}: {detail}"
        return self.make(fault.kind, text, retryable=fault.retryable, status=fault.status)
