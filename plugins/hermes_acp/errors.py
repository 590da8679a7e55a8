"""ACP error objects (docs/reference/acp.md#error-codes) and the mapping of core exceptions onto them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes_core.rpc import ACP_OPTIONS, INTERNAL_ERROR, INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hermes_core import ErrorRule, ErrorTable

AUTH_REQUIRED = -32000
SESSION_NOT_FOUND = -32002
NO_MODEL = "no model provider configured"
AUTH_MESSAGE = 'Authentication required: the model provider refused the credentials; run "hermes acp --setup"'

log = logging.getLogger("hermes_acp")


def invalid(field: str, problem: str, **extra: Any) -> RpcError:
    """Return a ``-32602`` naming the field and the problem.

    :param field: the offending field.
    :param problem: what is wrong, e.g. ``cwd must be an absolute path``.
    :param extra: more members for ``data``.
    :returns: the error.
    """
    return RpcError(INVALID_PARAMS, f"Invalid params: {problem}", {"field": field, **extra})


def not_found(session_id: Any) -> RpcError:
    """Return the ``-32002`` for an unknown session.

    :param session_id: the id asked for.
    :returns: the error.
    """
    return RpcError(SESSION_NOT_FOUND, "Resource not found: unknown session", {"sessionId": session_id})


def auth_required(problem: str) -> RpcError:
    """Return the ``-32000`` asking the user to set up the provider's credentials.

    :param problem: what is missing, e.g. ``provider 'openai' has no API key: set …``.
    :returns: the error.
    """
    return RpcError(
        AUTH_REQUIRED, f'Authentication required: {problem}; run "hermes acp --setup"', {"detail": problem}
    )


def internal(exc: BaseException | None, what: str) -> RpcError:
    """Log an unexpected failure under a fresh error id and return the ``-32603`` naming it.

    :param exc: the exception, if any (its traceback goes to the log file only).
    :param what: a short description for the log.
    :returns: the error with ``data.errorId``.
    """
    from hermes_core import internal_error

    return internal_error(ACP_OPTIONS, log, exc, what)


def start_failed(exc: BaseException, redact: Callable[[str], str]) -> RpcError:
    """Return the ``-32603`` for a request that waited for a start-up that failed.

    The editor shows the message, so it names the reason (redacted) instead of a bare
    "Internal error"; ``data.reason`` carries it alone for clients that display data.

    :param exc: the start-up error.
    :param redact: masks secrets in the text.
    :returns: the error.
    """
    reason = redact(str(exc) or type(exc).__name__)[:1000]
    return RpcError(INTERNAL_ERROR, f"Internal error: Hermes could not start: {reason}", {"reason": reason})


def _invalid_rule(
    catches: type[Exception], field: str | Callable[[Any], str], **data: Callable[[Any], Any]
) -> ErrorRule:
    """A ``-32602`` row: ``Invalid params: <exception text>``, data ``{field, **data}``."""
    from hermes_core import ErrorRule

    def build_data(exc: Any, _params: Any) -> dict[str, Any]:
        named = field(exc) if callable(field) else field
        return {"field": named, **{key: get(exc) for key, get in data.items()}}

    return ErrorRule(catches, INVALID_PARAMS, lambda exc: f"Invalid params: {exc}", build_data)


def _session_named(exc: Any, params: Any) -> dict[str, Any]:
    asked = params.get("sessionId")
    return {"sessionId": asked if asked is not None else exc.session_id}


def _table() -> ErrorTable:
    """The ACP rows of the core-exception table (built on first use: imports the core errors)."""
    from hermes_core import (
        ErrorRule,
        ErrorTable,
        InvalidValue,
        ModelAmbiguous,
        ModelNotFound,
        SessionBusy,
        SessionInUse,
        SessionNotFound,
    )

    return ErrorTable(
        [
            ErrorRule(
                SessionNotFound, SESSION_NOT_FOUND, "Resource not found: unknown session", _session_named
            ),
            ErrorRule(
                SessionInUse,
                INVALID_PARAMS,
                "Invalid params: session is open in another Hermes process",
                lambda _exc, _params: {"field": "sessionId", "reason": "in_use"},
            ),
            _invalid_rule(SessionBusy, "sessionId", reason=lambda exc: exc.reason),
            _invalid_rule(ModelAmbiguous, "modelId", candidates=lambda exc: list(exc.candidates)),
            _invalid_rule(
                ModelNotFound, "modelId", candidates=lambda exc: list(getattr(exc, "candidates", []) or [])
            ),
            _invalid_rule(InvalidValue, lambda exc: getattr(exc, "field", "params")),
        ]
    )


_TABLE: ErrorTable | None = None


def error_table() -> ErrorTable:
    """Return the ACP :class:`hermes_core.ErrorTable` (core exceptions -> ACP errors)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _table()
    return _TABLE


def from_core(exc: Exception, session_id: Any = None) -> RpcError | None:
    """Map a core exception onto its ACP error, or ``None`` when it is not a known one.

    :param exc: the exception.
    :param session_id: the session the request named, for ``-32002``.
    :returns: the wire error, or ``None``.
    """
    return error_table().map(exc, {"sessionId": session_id})


__all__ = [
    "AUTH_REQUIRED",
    "INTERNAL_ERROR",
    "SESSION_NOT_FOUND",
    "auth_required",
    "error_table",
    "from_core",
    "internal",
    "invalid",
    "not_found",
    "start_failed",
]
