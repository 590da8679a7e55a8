"""The console's routes: its page and assets, sign-in, and its own run API under
``/console/api/…`` backed by the same handlers and run manager as ``/v1/runs`` (docs/console.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from hermes_api_server import discovery, runs_http
from hermes_api_server.access import authenticate, check_scope
from hermes_api_server.console.auth import (
    COOKIE,
    PREFIX,
    ConsoleSessions,
    check_csrf,
    clear_cookie,
    set_cookie,
    signed_out,
)
from hermes_api_server.console.throttle import SignInThrottle
from hermes_api_server.errors import ApiError, json_response
from hermes_api_server.http_util import read_json
from hermes_api_server.keys import principal_of
from hermes_api_server.state import ServerState, get_state, principal, set_caller
from hermes_core import Principal, access_scopes

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SESSIONS: web.AppKey[ConsoleSessions] = web.AppKey("hermes_console_sessions", ConsoleSessions)
THROTTLE: web.AppKey[SignInThrottle] = web.AppKey("hermes_console_throttle", SignInThrottle)
ASSETS = {
    "console.css": "text/css",
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "markdown.js": "text/javascript",
    "run.js": "text/javascript",
    "runs.js": "text/javascript",
    "subagents.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Cache-Control": "no-cache",
}
RUN_LIST_LIMIT = 50


def _asset(name: str) -> bytes:
    return resources.files("hermes_api_server.console").joinpath("static", name).read_bytes()


def asset_sizes() -> dict[str, int]:
    """Return the byte size of every asset the console serves, the page included."""
    return {name: len(_asset(name)) for name in ("index.html", *ASSETS)}


async def page(request: web.Request) -> web.Response:
    """Serve the single page (every console URL shows it; the script routes)."""
    return web.Response(body=_asset("index.html"), content_type="text/html", headers=PAGE_HEADERS)


async def asset(request: web.Request) -> web.Response:
    """Serve one of the console's static files."""
    name = request.match_info["name"]
    kind = ASSETS.get(name)
    if kind is None:
        raise ApiError(404, "not_found", "Not found")
    return web.Response(body=_asset(name), content_type=kind, headers=PAGE_HEADERS)


def sessions_of(request: web.Request) -> ConsoleSessions:
    """Return the console session table of a request's app."""
    return request.app[SESSIONS]


def guarded(handler: Handler, *, csrf: bool) -> Handler:
    """Wrap an API handler: a live console session is required and acts as its key's principal;
    a state-changing call also needs the session's CSRF token."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        session = await sessions_of(request).get(request.cookies.get(COOKIE))
        if session is None:
            raise signed_out()
        if csrf:
            check_csrf(request, session)
        set_caller(request, session.caller)
        template = request.match_info.route.resource.canonical  # type: ignore[union-attr]
        check_scope(
            session.caller, access_scopes.route_scope(request.method, template), request.method, template
        )
        return await handler(request)

    return wrapped


def _session_body(caller: Principal, csrf: str, expires_at: float) -> dict[str, Any]:
    return {
        "object": "hermes.console.session",
        "principal": caller.key_id.removeprefix("principal:")[:8],
        "tenant": caller.tenant,
        "scopes": sorted(caller.scopes),
        "csrf_token": csrf,
        "expires_at": expires_at,
    }


async def sign_in(request: web.Request) -> web.Response:
    """Exchange an API key (typed into the page, sent in the body) for a session cookie; an
    address that sent too many wrong keys lately is refused first."""
    state = get_state(request)
    throttle = request.app[THROTTLE]
    address = request.remote or "unknown"
    throttle.check(address)
    body = await read_json(request)
    key = body.get("key")
    if not isinstance(key, str) or not key.strip():
        raise ApiError(400, "invalid_value", "key must be the API key as text", param="key")
    who = await authenticate(state, "Bearer " + key.strip())
    if who is None:
        throttle.failed(address)
        raise ApiError(401, "invalid_api_key", "Invalid API key")
    throttle.succeeded(address)
    table = sessions_of(request)
    token, session = await table.open(who)
    set_caller(request, who)
    response = json_response(_session_body(who, session.csrf, session.expires_at))
    set_cookie(response, request, token, table.ttl_s)
    return response


async def whoami(request: web.Request) -> web.Response:
    """Return the current session (with its CSRF token: only this origin can read it)."""
    session = await sessions_of(request).get(request.cookies.get(COOKIE))
    if session is None:
        raise signed_out()
    set_caller(request, session.caller)
    return json_response(_session_body(session.caller, session.csrf, session.expires_at))


async def sign_out(request: web.Request) -> web.Response:
    """End the session (CSRF-checked) and drop the cookie."""
    table = sessions_of(request)
    token = request.cookies.get(COOKIE)
    session = await table.get(token)
    if session is None:
        raise signed_out()
    check_csrf(request, session)
    await table.close(token)
    response = json_response({"object": "hermes.console.session", "signed_out": True})
    clear_cookie(response)
    return response


async def list_runs(request: web.Request) -> web.Response:
    """List the newest runs of the session's principal."""
    state = get_state(request)
    runs = await state.runs.recent(principal(request), RUN_LIST_LIMIT)
    fields = ("run_id", "status", "model", "resolved_model", "session_id", "created_at", "updated_at")
    data = [{k: status.get(k) for k in fields} for status in runs]
    return json_response({"object": "list", "data": data})


def install(app: web.Application, state: ServerState) -> None:
    """Add the console's routes and its session table to the application."""
    principals = frozenset(principal_of(key) for key in state.keyring.keys)
    app[SESSIONS] = ConsoleSessions(
        state.store, principals, state.settings.console_session_ttl_s, state.access_keys
    )
    settings = state.settings
    app[THROTTLE] = SignInThrottle(settings.console_signin_max_failures, settings.console_signin_window_s)
    r = app.router
    r.add_get(PREFIX, page)
    r.add_get(PREFIX + "/", page)
    r.add_get(PREFIX + "/runs/{run_id}", page)
    r.add_get(PREFIX + "/static/{name}", asset)
    r.add_post(PREFIX + "/api/session", sign_in)
    r.add_get(PREFIX + "/api/session", whoami)
    r.add_delete(PREFIX + "/api/session", sign_out)
    api = PREFIX + "/api"
    r.add_get(api + "/model/options", guarded(discovery.model_options, csrf=False))
    r.add_get(api + "/runs", guarded(list_runs, csrf=False))
    r.add_post(api + "/runs", guarded(runs_http.create_run, csrf=True))
    r.add_get(api + "/runs/{run_id}", guarded(runs_http.get_run, csrf=False))
    r.add_get(api + "/runs/{run_id}/events", guarded(runs_http.run_events, csrf=False))
    r.add_post(api + "/runs/{run_id}/approval", guarded(runs_http.run_approval, csrf=True))
    r.add_post(api + "/runs/{run_id}/steer", guarded(runs_http.steer_run, csrf=True))
    r.add_post(api + "/runs/{run_id}/stop", guarded(runs_http.stop_run, csrf=True))
