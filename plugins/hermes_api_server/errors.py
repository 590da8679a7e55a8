"""The error envelope and the exception handlers raise to produce it
(docs/reference/api-server.md#error-envelope, #error-codes)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

JSON_TYPE = "application/json"


class ApiError(Exception):
    """An error a handler raises; the middleware renders it as the docs/reference/api-server.md#error-envelope
    envelope.

    :param status: the HTTP status.
    :param code: a docs/reference/api-server.md#error-codes code.
    :param message: a redacted, human-readable message.
    :param param: the offending field or header.
    :param headers: extra response headers (``Retry-After``, ``Allow``, …).
    :param extra: extra keys inside ``error`` (the ``hermes`` block on 502s).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


def error_type(status: int) -> str:
    """Return the envelope ``type`` for a status."""
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def error_response(err: ApiError) -> web.Response:
    """Render an :class:`ApiError` as a JSON response with ``X-Should-Retry``."""
    body: dict[str, Any] = {
        "message": err.message,
        "type": error_type(err.status),
        "param": err.param,
        "code": err.code,
    }
    body.update(err.extra)
    headers = dict(err.headers)
    headers.setdefault("X-Should-Retry", "true" if err.status in (429, 503) else "false")
    response = json_response({"error": body}, status=err.status, headers=headers)
    if err.status == 408:
        # The request was not read to its end: the connection cannot carry another one.
        response.force_close()
    return response


def dumps(value: Any) -> str:
    """Encode compact JSON (UTF-8 kept as is)."""
    return _COMPACT(value)


# Made once: json.dumps with options builds an encoder per call (this runs for every SSE frame).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def json_response(value: Any, *, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """Return a ``no-store`` JSON response."""
    response = web.Response(
        text=dumps(value), status=status, content_type=JSON_TYPE, charset="utf-8", headers=headers
    )
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def invalid(message: str, param: str | None = None, code: str = "invalid_value") -> ApiError:
    """Return a 400 error."""
    return ApiError(400, code, message, param=param)
