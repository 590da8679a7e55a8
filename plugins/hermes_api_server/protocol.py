"""Render aiohttp's low-level HTTP errors (malformed requests) as the
docs/reference/api-server.md#error-envelope envelope.

aiohttp parses each request line, header block and chunked body before any application code runs.
When that parser fails it answers from ``RequestHandler.handle_error``, outside every middleware
and ``on_response_prepare`` signal, with a plain-text body that echoes the offending bytes (an
``Authorization`` line included) and aiohttp's own ``Server`` header. This module overrides that
public method in a subclass of the public ``web.RequestHandler`` and serves connections with it,
so those answers carry the envelope, ``X-Should-Retry: false`` and the security headers too.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable

from aiohttp import web

from hermes_api_server.errors import ApiError, error_response
from hermes_api_server.middleware import SECURITY_HEADERS, translate_http

log = logging.getLogger("hermes.api")
access_log = logging.getLogger("hermes.api.access")


def classify_parse_error(status: int, exc: BaseException | None) -> ApiError:
    """Return the envelope error for a request aiohttp could not parse or serve.

    The parser's message is never echoed: it quotes raw request bytes, which may hold a key.

    :param status: the status aiohttp chose (400 for parser errors, 500 for handler crashes).
    :param exc: the parser or handler exception, if any.
    :returns: the error to render.
    """
    if status >= 500:
        return ApiError(status, "internal_error", "Internal server error")
    if status == 413:
        return ApiError(413, "body_too_large", "Request body is too large")
    text = str(getattr(exc, "message", "") or exc or "")
    head = text.strip().splitlines()[0].lower() if text.strip() else ""
    # Both of aiohttp's parsers (C and pure Python) name the header in the first line.
    if "content-length" in head and "transfer-encoding" not in head:
        return ApiError(400, "invalid_content_length", "Malformed Content-Length", param="Content-Length")
    return ApiError(status, "malformed_request", "Malformed HTTP request")


class EnvelopeRequestHandler(web.RequestHandler):
    """aiohttp's HTTP protocol, answering its own errors with the JSON envelope."""

    __slots__ = ()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Return the envelope response for a malformed request or an unhandled crash.

        :param request: the (possibly placeholder) request aiohttp built.
        :param status: the status aiohttp chose.
        :param exc: the exception behind it.
        :param message: aiohttp's text for it (never sent: it quotes raw bytes).
        :returns: a JSON response that closes the connection.
        :raises ConnectionError: when part of another response was already written (aiohttp's
            own contract: the connection is then unusable).
        """
        if request.writer.output_size > 0:
            raise ConnectionError("a response was already started; the connection is closed")
        err = classify_parse_error(status, exc)
        if err.status >= 500:
            request_id = secrets.token_hex(4)
            log.error("request %s failed outside the application", request_id, exc_info=exc)
            err.message = f"Internal error (request {request_id})"
        else:
            # One line, no raw bytes: the parser's text may quote an Authorization header.
            access_log.info("%s - %s %s %s", "<malformed>", err.status, err.code, type(exc).__name__)
        response = error_response(err)
        for name, value in SECURITY_HEADERS.items():
            response.headers[name] = value
        response.force_close()
        return response

    async def finish_response(
        self, request: web.BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        """Send ``resp``; an aiohttp HTTP error raised before any middleware gets the envelope.

        Only an ``Expect`` header other than ``100-continue`` is refused that early (aiohttp
        raises a plain-text 417 while routing); every other error already passed through the
        middleware, which renders its own.

        :param request: the request.
        :param resp: the response, or the HTTP exception raised as one.
        :param start_time: when the request started (aiohttp's bookkeeping).
        :returns: what aiohttp's own method returns.
        """
        if isinstance(resp, web.HTTPException) and resp.status >= 400:
            err = translate_http(resp)
            access_log.info("%s %s %s %s", request.method, request.path, err.status, err.code)
            resp = error_response(err)
        return await super().finish_response(request, resp, start_time)


def protocol_factory(runner: web.AppRunner, header_timeout_s: float) -> Callable[[], asyncio.Protocol]:
    """Return the protocol factory that serves ``runner``'s application with the envelope handler.

    It builds exactly what ``runner.server()`` builds (the same manager, so graceful shutdown
    still tracks every connection), with aiohttp's access log off (the middleware writes our own).

    ``header_timeout_s`` becomes aiohttp's keep-alive timeout. aiohttp arms that timer when a
    connection opens and again after each response, and when it fires it closes the connection
    if no complete request head has arrived: a client that trickles its headers (or sends
    nothing) is cut off after that long, and so is an idle keep-alive connection. It never
    touches a request being served.

    :param runner: a runner after ``setup()``.
    :param header_timeout_s: how long a connection may take to deliver a complete request head.
    :returns: a callable for ``loop.create_server``.
    """
    manager = runner.server
    if manager is None:
        raise RuntimeError("call runner.setup() first")
    loop = asyncio.get_running_loop()

    def make() -> asyncio.Protocol:
        return EnvelopeRequestHandler(
            manager,
            loop=loop,
            access_log=None,  # type: ignore[arg-type]
            keepalive_timeout=header_timeout_s,
        )

    return make
