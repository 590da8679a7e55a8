"""How the gateway answers a request: the method tables and their dispatch
(docs/reference/tui-gateway.md#concurrency-and-ordering).

Methods come in three kinds: **fast** ones are synchronous and answered by :meth:`fast_path` in
arrival order; **ordered** ones run a synchronous prelude in :meth:`prepare` (so its decision is
made before the next frame is read) that returns an awaitable the response waits for; **slow**
ones are coroutines run on their own task. Ordered and slow methods are answered through
``jsonrpcserver`` bound to an explicit methods table (never its global registry); every failure
is mapped to the per-method codes of docs/reference/tui-gateway.md#error-codes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from hermes_core import MethodBinder, jsonrpc_adapters, rpc
from hermes_tui_gateway.access import check_method
from hermes_tui_gateway.conn import Conn
from hermes_tui_gateway.errors import TABLE, internal, map_error

Params = dict[str, Any]
#: A result is a plain dict, usually annotated with its ``wire_results`` type.
Result = Mapping[str, object]
FastHandler = Callable[[Conn, Params], Result]
OrderedHandler = Callable[[Conn, Params], Awaitable[Result]]
SlowHandler = Callable[[Conn, Params], Awaitable[Result]]


@dataclass(slots=True)
class RequestCtx:
    """What a dispatched method receives besides its params."""

    conn: Conn
    pending: Awaitable[Result] | None = None


class Dispatcher:
    """The method tables of a gateway and how a request reaches its handler (mixed into ``Gateway``)."""

    fast: dict[str, FastHandler]
    ordered: dict[str, OrderedHandler]
    slow: dict[str, SlowHandler]
    _methods: dict[str, Callable[..., Awaitable[Any]]]

    # -- dispatch ----------------------------------------------------------------------------
    def fast_path(self, conn: Conn, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a fast method at once; route others; refuse unknown methods."""
        method = message["method"]
        handler = self.fast.get(method)
        known = handler is not None or method in self.ordered or method in self.slow
        if conn.principal is not None and known:
            check_method(conn.principal, method)
        if handler is not None:
            try:
                return {"result": handler(conn, message["params"])}
            except rpc.RpcError:
                raise
            except Exception as exc:
                raise self.map_error(exc, method) from exc
        if method in self.ordered or method in self.slow:
            return None
        raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"unknown method: {method}")

    def prepare(self, conn: Conn, message: dict[str, Any]) -> None:
        """Run an ordered method's synchronous prelude before the next frame is read."""
        method = message["method"]
        ctx = RequestCtx(conn)
        handler = self.ordered.get(method)
        if handler is not None:
            try:
                ctx.pending = handler(conn, message["params"])
            except rpc.RpcError:
                raise
            except Exception as exc:
                raise self.map_error(exc, method) from exc
        message["\x00ctx"] = ctx

    async def dispatch(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer an ordered or slow method through ``jsonrpcserver``."""
        from jsonrpcserver import async_dispatch_to_serializable

        ctx = message.pop("\x00ctx")
        response = await async_dispatch_to_serializable(
            message,
            methods=self._methods,
            context=ctx,
            deserializer=_identity,
            validator=_identity,
        )
        return cast("dict[str, Any] | None", response)  # one message, never a batch

    def _build_methods(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        table: dict[str, Callable[..., Awaitable[Any]]] = {}
        for name in [*self.ordered, *self.slow]:
            table[name] = self._wrap(name)
        return table

    def _wrap(self, name: str) -> Callable[..., Awaitable[Any]]:
        from jsonrpcserver import Error, Success

        slow = self.slow.get(name)

        async def call(ctx: RequestCtx, params: dict[str, Any]) -> Any:
            if ctx.pending is not None:
                return await ctx.pending
            assert slow is not None
            return await slow(ctx.conn, params)

        on_success, on_error = jsonrpc_adapters(Success, Error)
        binder: MethodBinder[RequestCtx, Any] = MethodBinder(
            errors=TABLE, internal=internal, on_success=on_success, on_error=on_error
        )
        method = binder.bind(name, call)
        method.__name__ = name
        return method

    def map_error(self, exc: BaseException, method: str) -> rpc.RpcError:
        """Map a core exception to the method's code (see :func:`errors.map_error`)."""
        return map_error(exc, method)


def method_modules() -> tuple[Any, ...]:
    """Return the modules whose ``register(gw)`` fill the method tables, in registration order."""
    from hermes_tui_gateway import (
        feature_off,
        methods_attach,
        methods_commands,
        methods_compose,
        methods_compress,
        methods_config,
        methods_env,
        methods_history,
        methods_prompt,
        methods_session,
        methods_state,
        methods_subagents,
        methods_trees,
    )

    return (
        feature_off,  # first: a real method registered later replaces an "off" answer
        methods_session,
        methods_history,
        methods_compress,
        methods_state,
        methods_prompt,
        methods_config,
        methods_commands,
        methods_compose,
        methods_env,
        methods_subagents,
        methods_trees,
        methods_attach,
    )


def _identity(value: Any) -> Any:
    return value
