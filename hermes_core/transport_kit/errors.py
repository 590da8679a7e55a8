"""A declarative table from core exceptions to wire errors, and the one internal-error routine."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_core.rpc import PeerOptions, RpcError

Params = Mapping[str, Any]
#: Builds an error object from its code, message and data (``RpcError`` or a subclass).
MakeError = Callable[[int, str, Any], RpcError]


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """One row of an :class:`ErrorTable`: which exceptions, and the code, message and data.

    ``code``, ``message`` and ``data`` are values or callables; ``message`` defaults to the
    exception's text, ``data`` to none. ``data`` callables get the exception and the request's
    params (for example to echo the session id the request named) and may return None.
    """

    catches: type[BaseException] | tuple[type[BaseException], ...]
    code: int | Callable[[Any], int]
    message: str | Callable[[Any], str] | None = None
    data: Callable[[Any, Params], Any] | None = None

    def build(self, exc: BaseException, params: Params, make: MakeError) -> RpcError:
        """Return the wire error this row gives for ``exc``."""
        code = self.code(exc) if callable(self.code) else self.code
        if self.message is None:
            message = str(exc)
        else:
            message = self.message(exc) if callable(self.message) else self.message
        data = self.data(exc, params) if self.data is not None else None
        return make(code, message, data)


class ErrorTable:
    """Map exceptions to wire errors by the first matching :class:`ErrorRule`.

    An :class:`~hermes_core.rpc.RpcError` is already a wire error and passes through unchanged.
    """

    def __init__(self, rules: Sequence[ErrorRule], make: MakeError = RpcError) -> None:
        self.rules = tuple(rules)
        self.make = make

    def map(self, exc: BaseException, params: Params | None = None) -> RpcError | None:
        """Return the wire error for ``exc``, or None when no row covers it (an internal error)."""
        if isinstance(exc, RpcError):
            return exc
        for rule in self.rules:
            if isinstance(exc, rule.catches):
                return rule.build(exc, params or {}, self.make)
        return None


def internal_error(
    options: PeerOptions, log: logging.Logger, exc: BaseException | None, what: str
) -> RpcError:
    """Log an unexpected failure under a fresh error id and return the ``-32603`` naming that id.

    The traceback goes to ``log`` only; the wire error carries the transport's message and
    ``{<options.internal_error_key>: id}``, never the exception's text.

    :param options: the transport's peer options (message and data key).
    :param what: what failed, for the log (a method name, for example).
    """
    error_id = uuid.uuid4().hex
    log.error("%s: internal error %s in %s", options.name, error_id, what, exc_info=exc)
    return options.internal_error(error_id)
