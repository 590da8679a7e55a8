"""Turn HTTP statuses, transport exceptions and in-stream errors into ``ProviderError``.

Every message names the provider and says what went wrong in words a user can act on; it is
passed through :class:`Redactor` so the API key (and URL credentials) never appear in it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hermes_core import ProviderError

_MAX_DETAIL = 500


class StreamStalled(Exception):
    """The upstream sent nothing for the stall timeout."""


class StreamBroken(Exception):
    """The stream ended or was cut before it was complete, or could not be parsed."""


def display_url(url: str) -> str:
    """Return ``url`` without user info, query or fragment, for messages.

    :param url: any URL.
    :returns: scheme, host, port and path only.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class Redactor:
    """Remove secrets from text: the API key and any password in the base URL."""

    def __init__(self, *secrets: str | None) -> None:
        # Longest first so a secret that contains another is removed whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """Return ``text`` with every secret replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def url_secrets(url: str) -> tuple[str | None, ...]:
    """Return the user name and password embedded in ``url``, if any."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    return (parts.username, parts.password)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Return how many seconds the upstream asked us to wait.

    Understands ``Retry-After`` as seconds or as an HTTP date, and the ``retry-after-ms``
    header some OpenAI-compatible servers send.

    :param headers: response headers (case-insensitive mapping).
    :param now: the current epoch time (tests pass a fixed one).
    :returns: seconds (never negative), or ``None`` when the upstream did not say.
    """
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def error_detail(body: bytes) -> tuple[str, Any]:
    """Extract the upstream's error message and code from an error response body.

    :param body: the raw body (JSON in the usual shapes, or anything else).
    :returns: ``(message, code)``; the message falls back to the body's text, shortened.
    """
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return _shorten(text), None
    return detail_from_payload(payload, fallback=text)


def detail_from_payload(payload: Any, fallback: str = "") -> tuple[str, Any]:
    """Return ``(message, code)`` from a decoded error payload of any common shape."""
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, str):
            return _shorten(error), payload.get("code")
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or error.get("msg")
            code = error.get("code") or error.get("type")
            if isinstance(message, str) and message:
                return _shorten(message), code
        detail = payload.get("detail") or payload.get("message")
        if isinstance(detail, str) and detail:
            return _shorten(detail), payload.get("code")
    return _shorten(fallback or json.dumps(payload)), None


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


class ErrorFactory:
    """Build the ``ProviderError`` of one provider instance.

    :param label: the provider name shown first in every message.
    :param url: the endpoint root, shown (without credentials) in network messages.
    :param redact: removes secrets from every message.
    :param key_hint: what to set when no key is configured (e.g. ``OPENAI_API_KEY``).
    :param has_key: whether an API key is configured.
    """

    def __init__(self, label: str, url: str, redact: Redactor, key_hint: str | None, has_key: bool) -> None:
        self.label = label
        self.url = display_url(url)
        self.redact = redact
        self.key_hint = key_hint
        self.has_key = has_key

    def make(
        self,
        kind: Any,
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
        """Map an HTTP error response to an error kind (401/403 auth, 429, 5xx, other 4xx)."""
        detail, code = error_detail(body)
        said = f": {detail}" if detail else ""
        head = f"HTTP {status}{' ' + reason if reason else ''}"
        if status in (401, 403):
            hint = ""
            if not self.has_key:
                hint = f" (no API key is configured; set {self.key_hint})" if self.key_hint else ""
            return self.make("auth", f"authentication failed ({head}){said}{hint}", status=status)
        if status == 429:
            # An exhausted quota will not come back by waiting a few seconds.
            quota = code in ("insufficient_quota", "billing_hard_limit_reached")
            return self.make(
                "rate_limit",
                f"rate limited ({head}){said}",
                retryable=not quota,
                retry_after=parse_retry_after(headers),
                status=status,
            )
        if status >= 500:
            return self.make(
                "upstream",
                f"upstream error ({head}){said}",
                retryable=True,
                retry_after=parse_retry_after(headers),
                status=status,
            )
        return self.make("upstream", f"request rejected ({head}){said}", status=status)

    def from_stream_error(self, payload: Any) -> ProviderError:
        """Map an ``error`` object received inside the event stream."""
        detail, code = detail_from_payload(payload)
        status = code if isinstance(code, int) else None
        if status is None and isinstance(payload, dict):
            inner = payload.get("error")
            if isinstance(inner, dict) and isinstance(inner.get("status"), int):
                status = inner["status"]
        if status == 429 or code in ("rate_limit_exceeded", "rate_limit_error"):
            return self.make(
                "rate_limit", f"rate limited mid-stream: {detail}", retryable=True, status=status
            )
        if status in (401, 403):
            return self.make("auth", f"authentication failed mid-stream: {detail}", status=status)
        client_fault = status is not None and 400 <= status < 500
        return self.make(
            "upstream", f"upstream error mid-stream: {detail}", retryable=not client_fault, status=status
        )

    def from_exception(
        self, exc: BaseException, *, connect_timeout: float, stall_timeout: float
    ) -> ProviderError:
        """Map a transport failure (refused, DNS, timeout, stall, cut stream) to ``network``."""
        import aiohttp

        if isinstance(exc, StreamStalled):
            reason = f"the stream stalled (no data for {stall_timeout:g} s)"
        elif isinstance(exc, StreamBroken):
            reason = str(exc)
        elif isinstance(exc, aiohttp.ClientConnectorDNSError):
            reason = f"cannot resolve the host of {self.url}"
        elif isinstance(exc, aiohttp.ConnectionTimeoutError):
            reason = f"no connection to {self.url} within {connect_timeout:g} s"
        elif isinstance(exc, aiohttp.ClientConnectorError):
            os_error = exc.os_error
            if isinstance(os_error, ConnectionRefusedError):
                why = "connection refused"
            else:
                why = os_error.strerror or str(os_error) or type(os_error).__name__
            reason = f"cannot connect to {self.url} ({why})"
        elif isinstance(exc, aiohttp.SocketTimeoutError):
            reason = f"no answer from {self.url} (nothing received for {stall_timeout:g} s)"
        elif isinstance(exc, TimeoutError):
            reason = f"no answer from {self.url} in time"
        elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
            reason = "the connection was closed before the response was complete"
        elif isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
            reason = f"invalid base_url {self.url!r}"
        else:
            reason = f"request to {self.url} failed ({type(exc).__name__}: {exc})"
        return self.make("network", reason)
