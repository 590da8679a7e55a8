"""CORS, body limit, auth, the error envelope, security headers and the access log
(docs/reference/api-server.md#http-rules)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from aiohttp import web

from hermes_api_server.access import authenticate, check_scope
from hermes_api_server.console.auth import is_console_path, same_origin
from hermes_api_server.errors import ApiError, error_response
from hermes_api_server.proxies import networks_of, unwrap
from hermes_api_server.request_keys import request_key
from hermes_api_server.state import CALLER_KEY, get_state, set_caller
from hermes_api_server.trace_context import CALLER_TRACE
from hermes_core import StorageUnavailable, access_scopes

log = logging.getLogger("hermes.api")
_ids = random.Random()
access_log = logging.getLogger("hermes.api.access")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "X-Frame-Options": "DENY",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "X-XSS-Protection": "0",
    "Referrer-Policy": "no-referrer",
    "Server": "hermes",
}
ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = (
    "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, X-Hermes-Session-Id, "
    "X-Hermes-Session-Key, X-Hermes-Workspace"
)
EXPOSE_HEADERS = (
    "X-Hermes-Session-Id, X-Hermes-Session-Key, X-Hermes-Model, X-Hermes-Warning, "
    "Idempotency-Replayed, Retry-After, Location"
)
ORIGIN_KEY = request_key("hermes_cors_origin", str)
SENT_STATUS_KEY = request_key("hermes_sent_status", int)
CLIENT_CLOSED = 499  # logged for a request whose client left before any answer was sent


def _origin_allowed(origins: list[str], origin: str) -> str | None:
    """Return the ``Access-Control-Allow-Origin`` value for an allowed origin, else None."""
    if origin in origins:
        return origin
    if "*" in origins:
        return "*"
    return None


def _unauthorized() -> ApiError:
    return ApiError(
        401,
        "invalid_api_key",
        "Invalid or missing API key",
        headers={"WWW-Authenticate": 'Bearer realm="hermes"'},
    )


def translate_http(exc: web.HTTPException) -> ApiError:
    """Return the envelope error for an aiohttp HTTP error (404, 405, 413, 417, …)."""
    status = exc.status
    if status == 404:
        return ApiError(404, "not_found", "Not found")
    if status == 405:
        allow = exc.headers.get("Allow", "")
        return ApiError(405, "method_not_allowed", "Method not allowed", headers={"Allow": allow})
    if status == 413:
        return ApiError(413, "body_too_large", "Request body is too large")
    if status == 417:
        return ApiError(417, "expectation_failed", "Only 'Expect: 100-continue' is supported", param="Expect")
    if status >= 500:
        return ApiError(status, "internal_error", "Internal server error")
    return ApiError(status, "invalid_json" if status == 400 else "not_found", exc.reason or "Bad request")


@web.middleware
async def front_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Apply CORS, the body limit and auth, in that order, then render errors."""
    state = get_state(request)
    started = time.perf_counter()
    request_id = f"{_ids.getrandbits(32):08x}"  # unique enough, not secret: no system call
    status: int | None = None
    if state.settings.trusted_proxies:
        request = unwrap(request, networks_of(tuple(state.settings.trusted_proxies)))
    caller = request.headers.get("traceparent")
    if caller is not None:
        CALLER_TRACE.set(caller)
    try:
        response = await _front(request, handler)
        status = response.status
        return response
    except ApiError as api_err:
        status = api_err.status
        # Messages may quote what the client sent (a model reference, say): mask any secret.
        api_err.message = state.kernel.redactor(api_err.message)
        api_err.extra = cast(dict[str, Any], state.kernel.redactor.obj(api_err.extra))
        return error_response(api_err)
    except StorageUnavailable as exc:
        # The storage server is gone or every pooled connection is busy: retryable, never a hang.
        status = 503
        log.warning("request %s: %s", request_id, exc)
        return error_response(
            ApiError(
                503,
                "storage_unavailable",
                "Session storage is unavailable (server unreachable or all connections busy); try again",
                headers={"Retry-After": "1"},
            )
        )
    except web.HTTPException as exc:
        if exc.status < 400:
            status = exc.status
            raise
        translated = translate_http(exc)
        status = translated.status
        return error_response(translated)
    except Exception:
        status = 500
        log.exception("request %s failed", request_id)
        return error_response(ApiError(500, "internal_error", f"Internal error (request {request_id})"))
    finally:
        if status is None:
            # The handler was cancelled: the client closed the connection. A stream it was
            # reading had its status sent already; otherwise nothing was answered.
            status = request.get(SENT_STATUS_KEY, CLIENT_CLOSED)
        state.last_request_at = time.time()
        found = request.get(CALLER_KEY)
        who = found.key_id.removeprefix("principal:")[:8] if found is not None else "-"
        access_log.info(
            "%s %s %s %.1fms %s",
            request.method,
            request.path,
            status,
            (time.perf_counter() - started) * 1000,
            who,
        )


async def _front(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = get_state(request)
    origin = request.headers.get("Origin")
    console = is_console_path(request.path)
    if console:
        # The console's own page is its only client: no cross-origin call, whatever cors_origins says.
        if origin is not None and not same_origin(request, origin):
            raise ApiError(403, "origin_not_allowed", "Origin not allowed")
    elif origin is not None:
        allowed = _origin_allowed(state.settings.cors_origins, origin)
        if allowed is None:
            raise ApiError(403, "origin_not_allowed", "Origin not allowed")
        request[ORIGIN_KEY] = allowed
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            return web.Response(status=200)
    if request.method in ("POST", "PUT", "PATCH"):
        raw_length = request.headers.get("Content-Length")
        if raw_length is not None:
            if not raw_length.strip().isdigit():
                raise ApiError(
                    400, "invalid_content_length", "Malformed Content-Length", param="Content-Length"
                )
            if int(raw_length) > state.settings.max_body_bytes:
                raise ApiError(413, "body_too_large", "Request body is too large")
    match = request.match_info
    missing = match.http_exception
    if missing is not None and missing.status == 404:
        # An unknown path is a 404 with or without a key (the route list is public anyway:
        # /openapi.json); a known path still asks for the key before anything else.
        raise ApiError(404, "not_found", "Not found")
    if console:
        return await handler(request)  # the console checks its sign-in and the scope itself
    template = "" if missing is not None else match.route.resource.canonical  # type: ignore[union-attr]
    scope = None if missing is not None else access_scopes.route_scope(request.method, template)
    if scope == access_scopes.PUBLIC:
        return await handler(request)
    who = await authenticate(state, request.headers.get("Authorization"))
    if who is None:
        raise _unauthorized()
    set_caller(request, who)
    if missing is None:  # a 405 is answered by the router, after the key was checked
        check_scope(who, scope, request.method, template)
    return await handler(request)


async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """Add security and CORS headers to every response, SSE included, before its first byte."""
    request[SENT_STATUS_KEY] = response.status
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    # aiohttp fills in its own Server header first; ours names no versions.
    response.headers["Server"] = "hermes"
    allowed = request.get(ORIGIN_KEY)
    if allowed:
        response.headers["Access-Control-Allow-Origin"] = allowed
        if allowed != "*":
            response.headers["Vary"] = "Origin"
        response.headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
        response.headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS
        response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
        response.headers["Access-Control-Max-Age"] = "600"
    if response.status >= 400:
        response.headers.setdefault("X-Should-Retry", "true" if response.status in (429, 503) else "false")
