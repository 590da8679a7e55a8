"""How the gateway answers a request: the method tables and their dispatch
(docs/reference/tui-gateway.md#concurrency-and-ordering).

Methods come in three kinds: **fast** ones are synchronous and answered by :meth:`fast_path` in
arrival order; **ordered** ones run a synchronous prelude in :meth:`prepare` (so its decision is
made before the next frame is read) that returns an awaitable the response waits for; **slow**
ones are coroutines run on their own task. Ordered and slow methods are answered from an explicit
table of ``MethodBinder`` methods, which turn every failure into the per-method codes of
docs/reference/tui-gateway.md#error-codes. The shared peer has checked the envelope (``params``
is an object) and :meth:`fast_path` has refused unknown methods before a call gets here, so the
table is called directly: no JSON-RPC library (and its schema validator) is imported on the way
to the first answer.

Only the modules of :data:`~hermes_tui_gateway.method_index.EAGER` are registered when the
gateway starts; :meth:`fast_path` imports the module of any other method on its first call
(:mod:`hermes_tui_gateway.method_index`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_core import MethodBinder, rpc
from hermes_tui_gateway import method_index
from hermes_tui_gateway.access import check_method
from hermes_tui_gateway.conn import Conn
from hermes_tui_gateway.errors import TABLE, internal, map_error
from hermes_tui_gateway.method_index import method_modules as method_modules

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
    _methods: dict[str, Callable[..., Awaitable[dict[str, Any]]]]
    _lazy: dict[str, str]
    _binder: MethodBinder[RequestCtx, dict[str, Any]]

    def register_methods(self) -> None:
        """Fill the tables with the start-up modules; every other method loads on first call."""
        self._lazy = dict(method_index.LAZY_METHODS)
        for module in method_index.method_modules(method_index.EAGER):
            module.register(self)
        self._binder = MethodBinder(errors=TABLE, internal=internal, on_success=_success, on_error=_error)
        self._methods = {}
        self._bind_new()

    # -- dispatch ----------------------------------------------------------------------------
    def fast_path(self, conn: Conn, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a fast method at once; route others; refuse unknown methods."""
        method = message["method"]
        if method in self._lazy:
            self._load(self._lazy[method])
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
        """Answer an ordered or slow method: ``{"result": ...}`` or ``{"error": {...}}``.

        The method is in the table (``fast_path`` answered every other name) and ``params`` is an
        object (the peer checked it); a bound method never raises, it answers with the mapped
        error. A notification's answer is dropped by the peer.
        """
        ctx = message.pop("\x00ctx")
        method = self._methods[message["method"]]
        return await method(ctx, **message["params"])

    def _load(self, module: str) -> None:
        """Register the methods of a module listed in ``method_index.LAZY_METHODS``."""
        method_index.load(module).register(self)
        for name in [n for n, owner in self._lazy.items() if owner == module]:
            del self._lazy[name]
        self._bind_new()

    def _bind_new(self) -> None:
        """Bind the ordered and slow methods registered since the last call."""
        for name in [*self.ordered, *self.slow]:
            if name not in self._methods:
                self._methods[name] = self._wrap(name)

    def _wrap(self, name: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        slow = self.slow.get(name)

        async def call(ctx: RequestCtx, params: dict[str, Any]) -> Any:
            if ctx.pending is not None:
                return await ctx.pending
            assert slow is not None
            return await slow(ctx.conn, params)

        method = self._binder.bind(name, call)
        method.__name__ = name
        return method

    def map_error(self, exc: BaseException, method: str) -> rpc.RpcError:
        """Map a core exception to the method's code (see :func:`errors.map_error`)."""
        return map_error(exc, method)


def _success(result: Any) -> dict[str, Any]:
    return {"result": result}


def _error(error: rpc.RpcError) -> dict[str, Any]:
    return {"error": error.to_error()}
