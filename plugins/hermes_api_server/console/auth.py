"""Console sign-in: short-lived cookie sessions bound to the principal of the key that opened
them, with a CSRF token for every state-changing call (docs/console.md#security-model)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from aiohttp import web

from hermes_api_server.errors import ApiError
from hermes_api_server.records import ApiRecords
from hermes_core import Principal, legacy_principal

if TYPE_CHECKING:
    from hermes_core import AccessKeys

COOKIE = "hermes_console"
PREFIX = "/console"
COOKIE_PATH = PREFIX
CSRF_HEADER = "X-Hermes-CSRF"
MAX_SESSIONS = 1000  #: live sessions kept (all principals together); the oldest go first
#: What a sign-in made with a stored key records instead of a principal: the key's id.
KEY_PREFIX = "key:"


@dataclass(slots=True)
class ConsoleSession:
    """One signed-in browser: whose runs it sees, its CSRF token and when it ends."""

    principal: str
    csrf: str
    expires_at: float
    caller: Principal


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ConsoleSessions:
    """The console's sessions, kept in the API server's records (``ApiRecords``): with shared
    records every instance behind a load balancer honours a session and its sign-out at once, and
    a restart ends none. No copy is cached here: every console call looks its session up.

    Only a hash of each cookie value is stored, so the table itself grants nothing; a session whose
    principal is no longer one of the configured keys' is refused and dropped (key rotation).
    """

    def __init__(
        self,
        records: ApiRecords,
        principals: frozenset[str],
        ttl_s: float,
        access_keys: AccessKeys | None = None,
    ) -> None:
        self.records = records
        self.principals = principals
        self.ttl_s = ttl_s
        self.access_keys = access_keys

    async def open(self, caller: Principal) -> tuple[str, ConsoleSession]:
        """Start a session for ``caller``; return the cookie value and the session.

        A stored key's session records the key's id, so revoking the key ends the session.
        """
        token = secrets.token_urlsafe(32)
        legacy = caller.key_id.startswith("principal:")
        principal = caller.key_id if legacy else KEY_PREFIX + caller.key_id
        session = ConsoleSession(principal, secrets.token_urlsafe(24), time.time() + self.ttl_s, caller)
        await self.records.open_console_session(
            _digest(token), principal, session.csrf, session.expires_at, MAX_SESSIONS
        )
        return token, session

    async def get(self, token: str | None) -> ConsoleSession | None:
        """Return the live session of a cookie value, else None."""
        if not token:
            return None
        found = await self.records.console_session(_digest(token))
        if found is None:
            return None
        principal, csrf, expires_at = found
        caller = await self._caller(principal)
        if caller is None:
            await self.records.close_console_session(_digest(token))
            return None
        return ConsoleSession(principal, csrf, expires_at, caller)

    async def _caller(self, principal: str) -> Principal | None:
        """Return the live principal a session was opened with (None: key removed or revoked)."""
        if principal.startswith(KEY_PREFIX):
            if self.access_keys is None:
                return None
            return await self.access_keys.principal_of_id(principal.removeprefix(KEY_PREFIX))
        return legacy_principal(principal) if principal in self.principals else None

    async def close(self, token: str | None) -> bool:
        """End the session of a cookie value; tell whether there was one."""
        return token is not None and await self.records.close_console_session(_digest(token))


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
