"""ACP error objects (docs/reference/acp.md#error-codes) and the mapping of core exceptions onto them."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from hermes_core.rpc import ACP_OPTIONS, INTERNAL_ERROR, INVALID_PARAMS, RpcError

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
    error_id = uuid.uuid4().hex
    log.error("internal error %s in %s", error_id, what, exc_info=exc)
    return ACP_OPTIONS.internal_error(error_id)


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


def from_core(exc: Exception, session_id: Any = None) -> RpcError | None:
    """Map a core exception onto its ACP error, or ``None`` when it is not a known one.

    :param exc: the exception.
    :param session_id: the session the request named, for ``-32002``.
    :returns: the wire error, or ``None``.
    """
    from hermes_core import (
        InvalidValue,
        ModelAmbiguous,
        ModelNotFound,
        SessionBusy,
        SessionInUse,
        SessionNotFound,
    )

    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, SessionNotFound):
        return not_found(session_id if session_id is not None else exc.session_id)
    if isinstance(exc, SessionInUse):
        return invalid("sessionId", "session is open in another Hermes process", reason="in_use")
    if isinstance(exc, SessionBusy):
        return invalid("sessionId", str(exc), reason=exc.reason)
    if isinstance(exc, ModelAmbiguous):
        return invalid("modelId", str(exc), candidates=list(exc.candidates))
    if isinstance(exc, ModelNotFound):
        return invalid("modelId", str(exc), candidates=list(getattr(exc, "candidates", []) or []))
    if isinstance(exc, InvalidValue):
        return invalid(getattr(exc, "field", "params"), str(exc))
    return None


__all__ = [
    "AUTH_REQUIRED",
    "INTERNAL_ERROR",
    "SESSION_NOT_FOUND",
    "auth_required",
    "from_core",
    "internal",
    "invalid",
    "not_found",
    "start_failed",
]
