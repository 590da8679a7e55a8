"""Process-wide state of the API server, kept on one ``web.AppKey`` (docs/reference/api-server.md#scope)."""

from __future__ import annotations

import asyncio
import contextvars
import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.errors import ApiError
from hermes_api_server.request_keys import request_key

if TYPE_CHECKING:
    from hermes_api_server.chat_index import ChatIndex
    from hermes_api_server.idempotency import TurnKeys
    from hermes_api_server.keys import KeyRing
    from hermes_api_server.pool import SessionPool
    from hermes_api_server.records import ApiRecords
    from hermes_api_server.response_cancel import LiveResponse
    from hermes_api_server.runs import RunManager
    from hermes_api_server.settings import ApiSettings
    from hermes_core import AccessKeys, Kernel, Principal


@dataclass(slots=True)
class ServerState:
    """Everything the handlers share."""

    kernel: Kernel
    settings: ApiSettings
    keyring: KeyRing
    data_dir: Path
    version: str
    pool: SessionPool
    store: ApiRecords
    runs: RunManager
    idempotency: TurnKeys
    chat_index: ChatIndex
    started_at: float = field(default_factory=time.time)
    host: str = "127.0.0.1"
    port: int = 0
    draining: bool = False
    active_turns: int = 0
    last_request_at: float | None = None
    loop_lag_ms: float = 0.0
    browser: Any = None
    turn_tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    #: Responses whose turn runs in this process, by response id (what a cancel reaches).
    live_responses: dict[str, LiveResponse] = field(default_factory=dict)
    #: A scenario's restart fault (docs/reference/scenarios.md#faults): close the listener and
    #: every connection, listen again after the given milliseconds. Set by the server loop.
    restart_listener: Callable[[int], None] | None = None
    #: The scoped keys kept in the kernel's records (docs/reference/api-server.md#scoped-keys).
    access_keys: AccessKeys | None = None

    def workspace_roots(self) -> list[str]:
        """Return where a request may point its workspace: ``workspace_roots`` and the default."""
        roots = list(self.settings.workspace_roots)
        if self.pool.default_workspace is not None:
            roots.append(str(self.pool.default_workspace))
        return roots

    def in_flight(self) -> int:
        """Return chat/Responses turns being served plus non-terminal runs."""
        return self.active_turns + self.runs.non_terminal_count()

    def admit(self) -> None:
        """Refuse new agent work while draining or at the concurrency cap.

        :raises ApiError: 503 ``gateway_draining`` or 429 ``rate_limit_exceeded``.
        """
        if self.draining:
            raise ApiError(
                503, "gateway_draining", "The server is shutting down", headers={"Retry-After": "1"}
            )
        cap = self.settings.max_concurrent_runs
        if cap and self.in_flight() >= cap:
            raise ApiError(
                429,
                "rate_limit_exceeded",
                f"Too many concurrent runs (max {cap})",
                headers={"Retry-After": "1"},
            )

    def last_request_iso(self) -> str | None:
        if self.last_request_at is None:
            return None
        stamp = _dt.datetime.fromtimestamp(self.last_request_at, _dt.UTC)
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


STATE: web.AppKey[ServerState] = web.AppKey("hermes_api_state", ServerState)
#: The owner label of the caller's records (``Principal.owner``); read through :func:`principal`.
PRINCIPAL_KEY = request_key("hermes_principal", str)
#: The authenticated caller (:class:`hermes_core.Principal`); read through :func:`caller`.
CALLER_KEY = request_key("hermes_caller", object)
_CURRENT_CALLER: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "hermes_caller", default=None
)


def get_state(request: web.Request) -> ServerState:
    """Return the server state of a request's app."""
    return request.app[STATE]


def principal(request: web.Request) -> str:
    """Return the owner label the authenticated caller's records are filed under: its tenant's
    (``tenant:<name>``), or ``principal:<32 hex>`` for a configured or generated key."""
    value: str = request[PRINCIPAL_KEY]
    return value


def caller(request: web.Request) -> Principal | None:
    """Return who made the request: key id, tenant and scopes (None on a public route).

    The one place other features (budgets, rate limits, logs) read "which key, which tenant".
    """
    found: Principal | None = request.get(CALLER_KEY)
    return found


def set_caller(request: web.Request, who: Principal) -> None:
    """Record the authenticated caller on a request (and the owner its records are filed under).

    The caller is also the request task's current caller (:func:`current_caller`), which the
    tasks it starts (a run, a background response) inherit.
    """
    request[CALLER_KEY] = who
    request[PRINCIPAL_KEY] = who.owner
    _CURRENT_CALLER.set(who)


def current_caller() -> Principal | None:
    """Return the authenticated caller of the request this task serves (None outside one)."""
    return _CURRENT_CALLER.get()
