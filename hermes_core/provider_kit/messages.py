"""Read what an upstream said about a failure, and keep secrets out of what we say.

Error bodies come in many shapes (OpenAI's ``{"error": {"message", "code"}}``, Anthropic's
``{"error": {"type", "message"}}``, FastAPI's ``{"detail"}``, plain text or HTML); the helpers
here pull out one short message and a code, read ``Retry-After``, and strip credentials from
URLs and messages.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_MAX_DETAIL = 500


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


def url_secrets(url: str) -> tuple[str | None, ...]:
    """Return the user name and password embedded in ``url``, if any."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    return (parts.username, parts.password)


class Redactor:
    """Remove secrets from provider messages: the API key and any credentials in the base URL.

    :param secrets: values to remove; ``None`` and values shorter than 4 characters are skipped.
    """

    def __init__(self, *secrets: str | None) -> None:
        # Longest first so a secret that contains another is removed whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """Return ``text`` with every secret replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Return how many seconds the upstream asked us to wait.

    Understands ``Retry-After`` as seconds or as an HTTP date, and the ``retry-after-ms`` header
    some OpenAI-compatible servers and API proxies send.

    :param headers: response headers (a case-insensitive mapping).
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
    """Return ``(message, code)`` from a decoded error payload of any common shape.

    :param payload: the decoded error body or in-stream error object.
    :param fallback: the text shown when no message is found (default: the payload as JSON).
    :returns: the shortened message and the ``code`` (or ``type``) the upstream gave, if any.
    """
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
