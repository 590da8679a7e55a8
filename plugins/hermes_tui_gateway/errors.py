"""Map the core's typed failures to the TUI gateway's per-method codes
(docs/reference/tui-gateway.md#error-codes).

Anything unexpected becomes an opaque ``-32603`` whose ``error_id`` names the traceback logged
to stderr, so exception text never reaches the wire.
"""

from __future__ import annotations

import logging
import uuid

from hermes_core import (
    CommandNotAvailable,
    CommandUsageError,
    ConfigError,
    InvalidValue,
    ModelAmbiguous,
    ModelNotFound,
    RewindError,
    SessionBusy,
    SessionInUse,
    SessionNotFound,
    rpc,
)
from hermes_tui_gateway.params import GatewayError

log = logging.getLogger("hermes.tui")


def map_error(exc: BaseException, method: str) -> rpc.RpcError:
    """Map a core exception to the method's code; anything unexpected is an opaque -32603."""
    if isinstance(exc, rpc.RpcError):
        return exc
    if isinstance(exc, RewindError):
        return GatewayError(exc.code, str(exc), exc.data or None)
    if isinstance(exc, SessionInUse):
        return GatewayError(4009, "session is open in another Hermes process", {"reason": "in_use"})
    if isinstance(exc, SessionBusy):
        return GatewayError(4009, str(exc) or "session busy", {"reason": exc.reason})
    if isinstance(exc, SessionNotFound):
        return GatewayError(4001, "session not found", {"session_id": exc.session_id, "resumable": False})
    if isinstance(exc, ModelAmbiguous | ModelNotFound):
        return GatewayError(4002, str(exc), {"candidates": list(exc.candidates)})
    if isinstance(exc, CommandUsageError):
        return GatewayError(4004, str(exc))
    if isinstance(exc, CommandNotAvailable):
        return GatewayError(4018, str(exc))
    if isinstance(exc, InvalidValue):
        allowed = exc.allowed if isinstance(exc.allowed, list | tuple) else None
        data = {"key": exc.field, "allowed": list(allowed)} if allowed else None
        return GatewayError(4002, str(exc), data)
    if isinstance(exc, ConfigError):
        return GatewayError(4002, str(exc))
    error_id = uuid.uuid4().hex
    log.error("tui: internal error %s in %s", error_id, method, exc_info=exc)
    return rpc.RpcError(rpc.INTERNAL_ERROR, "internal error", {"error_id": error_id})
