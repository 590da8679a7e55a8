"""Turn ``async impl(ctx, params)`` functions into dispatcher methods that always answer.

:class:`MethodBinder` is independent of the JSON-RPC library: it is given how to build the
library's success and error results (:func:`jsonrpc_adapters` does that for libraries shaped like
``jsonrpcserver``: ``Success(result)`` and ``Error(code, message[, data])``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from hermes_core.rpc import RpcError
from hermes_core.transport_kit.errors import ErrorTable

C = TypeVar("C")
R = TypeVar("R")

Impl = Callable[[C, dict[str, Any]], Awaitable[Any]]
#: Runs before the implementation; returning an error answers the request with it.
Before = Callable[[C], Awaitable[RpcError | None]]
Internal = Callable[[BaseException, str], RpcError]


def jsonrpc_adapters(
    success: Callable[[Any], R], error: Callable[..., R]
) -> tuple[Callable[[Any], R], Callable[[RpcError], R]]:
    """Return ``(on_success, on_error)`` for a library with ``Success``/``Error`` result types.

    ``data`` is passed only when present, so an error without data has no ``data`` member.
    """

    def on_error(err: RpcError) -> R:
        if err.data is None:
            return error(err.code, err.message)
        return error(err.code, err.message, err.data)

    return success, on_error


class MethodBinder(Generic[C, R]):
    """Bind implementations to wire names with one error policy.

    A bound method is ``async method(ctx, /, **params)``: unknown params never fail binding.
    Exceptions become wire errors through ``errors``; anything the table does not cover becomes
    ``internal(exc, name)`` (see :func:`~hermes_core.transport_kit.errors.internal_error`).
    """

    def __init__(
        self,
        *,
        errors: ErrorTable,
        internal: Internal,
        on_success: Callable[[Any], R],
        on_error: Callable[[RpcError], R],
    ) -> None:
        self.errors = errors
        self.internal = internal
        self.on_success = on_success
        self.on_error = on_error

    def wire_error(self, exc: BaseException, name: str, params: dict[str, Any] | None = None) -> RpcError:
        """Return the wire error for ``exc`` raised by method ``name`` (never raises)."""
        mapped = self.errors.map(exc, params)
        return mapped if mapped is not None else self.internal(exc, name)

    def bind(
        self, name: str, impl: Impl[C], *, before: Before[C] | None = None
    ) -> Callable[..., Awaitable[R]]:
        """Return the dispatcher method for ``impl`` under the wire name ``name``."""

        async def method(ctx: C, /, **params: Any) -> R:
            if before is not None:
                refused = await before(ctx)
                if refused is not None:
                    return self.on_error(refused)
            try:
                return self.on_success(await impl(ctx, params))
            except Exception as exc:
                return self.on_error(self.wire_error(exc, name, params))

        method.__name__ = method.__qualname__ = name.replace("/", "_").replace("$", "").replace(".", "_")
        return method
