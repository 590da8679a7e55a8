"""Inbound dispatch through ``jsonrpcserver`` 5.0.9 with the explicit method table
(docs/reference/acp.md#inbound-dispatch).

Imported on the first request after ``initialize``, so the static answer never waits for it.
Every handler is ``(conn, /, **params)`` so unknown fields never fail binding (trap 2), and is
wrapped so that an unexpected exception becomes ``-32603`` with an error id instead of its text
(trap 4). The peer already turns null params into ``{}`` (trap 1) and rewrites the dispatcher's
own ``-32000 "Server error"`` (trap 3); each request runs on its own task (trap 5).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from jsonrpcserver import Error, Result, Success, async_dispatch_to_serializable

from hermes_acp import config_methods, prompting, sessions
from hermes_acp.conn import AcpConnection
from hermes_acp.errors import error_table, internal, start_failed
from hermes_core import MethodBinder, jsonrpc_adapters
from hermes_core.rpc import RpcError

log = logging.getLogger("hermes_acp")

Impl = Callable[[AcpConnection, dict[str, Any]], Awaitable[Any]]


async def _ready(conn: AcpConnection) -> RpcError | None:
    """Wait for the kernel; a failed start-up answers with its (redacted) reason."""
    try:
        await conn.wait_ready()
    except Exception as exc:
        return start_failed(exc, conn.kernel.redactor)
    return None


_success, _error = jsonrpc_adapters(Success, Error)
_BINDER: MethodBinder[AcpConnection, Result] = MethodBinder(
    errors=error_table(), internal=internal, on_success=_success, on_error=_error
)


def _bind(name: str, impl: Impl, *, wait: bool = True) -> Callable[..., Awaitable[Result]]:
    """Bind ``impl`` under ``name``; with ``wait`` it first waits for the kernel to be ready."""
    return _BINDER.bind(name, impl, before=_ready if wait else None)


async def _initialize(conn: AcpConnection, params: dict[str, Any]) -> Any:
    # Normally answered by the peer's fast path; kept so the table is complete.
    from hermes_acp.static import initialize_result
    from hermes_core import __version__

    result, conn.caps = initialize_result(params, __version__, mcp_loaded=conn.mcp_loaded())
    return result


METHODS: dict[str, Callable[..., Awaitable[Result]]] = {
    "initialize": _bind("initialize", _initialize, wait=False),
    "authenticate": _bind("authenticate", sessions.authenticate),
    "session/new": _bind("session/new", sessions.new_session),
    "session/load": _bind("session/load", sessions.load_session),
    "session/resume": _bind("session/resume", sessions.resume_session),
    "session/list": _bind("session/list", sessions.list_sessions),
    "session/close": _bind("session/close", sessions.close_session),
    "session/fork": _bind("session/fork", sessions.fork_session),
    "session/set_mode": _bind("session/set_mode", config_methods.set_mode),
    "session/set_config_option": _bind("session/set_config_option", config_methods.set_config_option),
    "session/set_model": _bind("session/set_model", config_methods.set_model),
    "session/prompt": _bind("session/prompt", prompting.prompt),
    "session/cancel": _bind("session/cancel", prompting.cancel),
    "$/cancel_request": _bind("$/cancel_request", prompting.cancel_request),
}


async def dispatch(conn: AcpConnection, message: dict[str, Any]) -> Mapping[str, Any] | None:
    """Dispatch one parsed request through ``jsonrpcserver``.

    :param conn: the connection (passed to handlers as their context).
    :param message: the parsed, normalised request.
    :returns: the response dict, or ``None`` for a notification.
    """
    if message["method"] not in METHODS:
        log.debug("unknown method %r", message["method"])
    response = await async_dispatch_to_serializable(
        "", methods=METHODS, context=conn, deserializer=lambda _text: message
    )
    if isinstance(response, list):  # never for one object; keep the peer's contract anyway
        return response[0] if response else None
    return response
