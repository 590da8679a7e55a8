"""Console sign-in: short-lived cookie sessions bound to the principal of the key that opened
them, with a CSRF token for every state-changing call (docs/console.md#security-model)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from hermes_api_server.errors import ApiError

COOKIE = "hermes_console"
PREFIX = "/console"
COOKIE_PATH = PREFIX
CSRF_HEADER = "X-Hermes-CSRF"
MAX_SESSIONS = 1000


@dataclass(slots=True)
class ConsoleSession:
    """One signed-in browser: whose runs it sees, its CSRF token and when it ends."""

    principal: str
    csrf: str
    expires_at: float


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ConsoleSessions:
    """The console's sessions, in memory: a restart (and so a key rotation) ends them all.

    Only a hash of each cookie value is kept, so the table itself grants nothing.
    """

    def __init__(self, principals: frozenset[str], ttl_s: float) -> None:
        self.principals = principals
        self.ttl_s = ttl_s
        self._sessions: dict[str, ConsoleSession] = {}

    def open(self, principal: str) -> tuple[str, ConsoleSession]:
        """Start a session for ``principal``; return the cookie value and the session."""
        self._prune()
        if len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions, key=lambda k: self._sessions[k].expires_at)
            del self._sessions[oldest]
        token = secrets.token_urlsafe(32)
        session = ConsoleSession(principal, secrets.token_urlsafe(24), time.time() + self.ttl_s)
        self._sessions[_digest(token)] = session
        return token, session

    def get(self, token: str | None) -> ConsoleSession | None:
        """Return the live session of a cookie value, else None (expired ones are dropped)."""
        if not token:
            return None
        digest = _digest(token)
        session = self._sessions.get(digest)
        if session is None:
            return None
        if session.expires_at <= time.time() or session.principal not in self.principals:
            del self._sessions[digest]
            return None
        return session

    def close(self, token: str | None) -> bool:
        """End the session of a cookie value; tell whether there was one."""
        return token is not None and self._sessions.pop(_digest(token), None) is not None

    def _prune(self) -> None:
        now = time.time()
        for k in [k for k, s in self._sessions.items() if s.expires_at <= now]:
            del self._sessions[k]


def is_console_path(path: str) -> bool:
    """Tell whether a request path belongs to the console (which authenticates on its own)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def same_origin(request: web.Request, origin: str) -> bool:
    """Tell whether an ``Origin`` header names the host the request was sent to."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()


def set_cookie(response: web.StreamResponse, request: web.Request, token: str, ttl_s: float) -> None:
    """Attach the session cookie: HttpOnly, SameSite=Strict, scoped to the console's paths."""
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(ttl_s),
        path=COOKIE_PATH,
        httponly=True,
        samesite="Strict",
        secure=request.secure,
    )


def clear_cookie(response: web.StreamResponse) -> None:
    """Tell the browser to drop the session cookie."""
    response.del_cookie(COOKIE, path=COOKIE_PATH)


def signed_out() -> ApiError:
    """Return the 401 of a request without a live console session."""
    return ApiError(401, "console_signed_out", "Sign in to the console first")


def check_csrf(request: web.Request, session: ConsoleSession) -> None:
    """Refuse a state-changing call whose CSRF header does not match the session's token.

    :raises ApiError: 403 ``csrf_failed``.
    """
    sent = request.headers.get(CSRF_HEADER, "")
    if not sent or not hmac.compare_digest(sent.encode("utf-8"), session.csrf.encode("utf-8")):
        raise ApiError(403, "csrf_failed", "Missing or wrong CSRF token", param=CSRF_HEADER)
