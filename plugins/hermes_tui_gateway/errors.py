"""Map the core's typed failures to the TUI gateway's per-method codes
(docs/reference/tui-gateway.md#error-codes).

Anything unexpected becomes an opaque ``-32603`` whose ``error_id`` names the traceback logged
to stderr, so exception text never reaches the wire.
"""

from __future__ import annotations

import logging

from hermes_core import (
    BudgetExceeded,
    CommandNotAvailable,
    CommandUsageError,
    ConfigError,
    ErrorRule,
    ErrorTable,
    InvalidValue,
    ModelAmbiguous,
    ModelNeedsKey,
    ModelNotFound,
    ProviderError,
    RewindError,
    SessionBusy,
    SessionInUse,
    SessionNotFound,
    internal_error,
    redact,
    rpc,
)
from hermes_tui_gateway.params import GatewayError

log = logging.getLogger("hermes.tui")


def _allowed(exc: InvalidValue, _params: object) -> dict[str, object] | None:
    allowed = exc.allowed if isinstance(exc.allowed, list | tuple) else None
    return {"key": exc.field, "allowed": list(allowed)} if allowed else None


#: Core exceptions -> the gateway's per-method codes (first matching row wins).
TABLE = ErrorTable(
    [
        ErrorRule(RewindError, lambda exc: exc.code, data=lambda exc, _p: exc.data or None),
        ErrorRule(
            SessionInUse,
            4009,
            "session is open in another Hermes process",
            lambda _e, _p: {"reason": "in_use"},
        ),
        ErrorRule(
            SessionBusy, 4009, lambda exc: str(exc) or "session busy", lambda exc, _p: {"reason": exc.reason}
        ),
        ErrorRule(
            SessionNotFound,
            4001,
            "session not found",
            lambda exc, _p: {"session_id": exc.session_id, "resumable": False},
        ),
        ErrorRule(
            ModelNeedsKey,
            4002,
            data=lambda exc, _p: {"candidates": list(exc.candidates), "keys": dict(exc.keys)},
        ),
        ErrorRule(
            (ModelAmbiguous, ModelNotFound), 4002, data=lambda exc, _p: {"candidates": list(exc.candidates)}
        ),
        ErrorRule(CommandUsageError, 4004),
        # A model call the method needed (e.g. /compress) would pass a budget limit: not made.
        ErrorRule(
            BudgetExceeded,
            4033,
            lambda exc: redact(str(exc)),
            lambda exc, _p: {
                "code": "budget_exceeded",
                "limit": exc.limit,
                "bucket": exc.bucket,
                "retry_after": exc.retry_after,
            },
        ),
        ErrorRule(CommandNotAvailable, 4018),
        ErrorRule(InvalidValue, 4002, data=_allowed),
        ErrorRule(ConfigError, 4002),
        # A model call the method needed (e.g. /compress) failed: the provider's reason, keys masked.
        ErrorRule(
            ProviderError,
            5005,
            lambda exc: f"the model call failed: {redact(str(exc))}",
            lambda exc, _p: {"kind": exc.kind},
        ),
    ],
    make=GatewayError,
)


def internal(exc: BaseException | None, method: str) -> rpc.RpcError:
    """Log an unexpected failure under an error id; return the opaque ``-32603`` naming it."""
    return internal_error(rpc.TUI_OPTIONS, log, exc, method)


def map_error(exc: BaseException, method: str) -> rpc.RpcError:
    """Map a core exception to the method's code; anything unexpected is an opaque -32603."""
    mapped = TABLE.map(exc)
    return mapped if mapped is not None else internal(exc, method)
