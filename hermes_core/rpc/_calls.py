"""Per-call objects of the JSON-RPC peer: the inbound request context and the outbound request.

:class:`RequestContext` follows one inbound message while it is handled and holds its
after-response hooks; :func:`current_request` finds it from inside a handler through a context
variable. :class:`OutboundRequest` is one request this side sent and is waiting on, and
:class:`Correlator` matches responses to those requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.rpc._inbound import error_from_wire
from hermes_core.rpc._wire import PeerClosedError, RpcTimeout

if TYPE_CHECKING:
    from hermes_core.rpc._peer import RpcPeer

Message = dict[str, Any]
#: The injected handler: gets the normalised message, returns a response (``{"result": ...}`` or
#: ``{"error": {...}}``; the peer sets ``jsonrpc`` and ``id``) or ``None`` for a notification.
Dispatch = Callable[[Message], Awaitable[Mapping[str, Any] | None]]
#: Synchronous answer in arrival order; ``None`` falls through to ``prepare`` + ``dispatch``.
FastPath = Callable[[Message], Mapping[str, Any] | None]
#: Synchronous hook run before ``dispatch`` is scheduled and before the next line is read.
Prepare = Callable[[Message], None]
#: Why :meth:`RpcPeer.run` ended.
CloseReason = Literal["eof", "output_lost", "closed"]

#: An after-response hook: a plain synchronous callable (schedule a task for async work).
AfterResponse = Callable[[], object]

_CURRENT: ContextVar[RequestContext | None] = ContextVar("hermes_rpc_request", default=None)


class RequestContext:
    """One inbound request or notification while the peer handles it.

    Available as :func:`current_request` inside ``fast_path``, ``prepare`` and the ``dispatch``
    task (and in tasks those create, which inherit the context).

    :ivar message: the normalised message (``jsonrpc`` and ``params`` always present).
    :ivar id: the request id (``None`` for a notification).
    :ivar is_notification: the message had no ``id`` member, so it gets no response.
    :ivar method: the method name.
    :ivar params: the params object (``{}`` when omitted or null).
    :ivar state: scratch space a transport's ``prepare`` can fill for its ``dispatch``.
    :ivar peer: the peer that received it.
    """

    __slots__ = (
        "_hooks",
        "_responded",
        "id",
        "is_notification",
        "message",
        "method",
        "params",
        "peer",
        "state",
    )

    def __init__(self, peer: RpcPeer, message: dict[str, Any], is_notification: bool) -> None:
        """Wrap a validated message.

        :param peer: the receiving peer.
        :param message: the normalised message.
        :param is_notification: whether it lacks an ``id``.
        """
        self.peer = peer
        self.message = message
        self.id: Any = message.get("id")
        self.is_notification = is_notification
        self.method: str = message["method"]
        self.params: dict[str, Any] = message["params"]
        self.state: dict[str, Any] = {}
        self._hooks: list[AfterResponse] = []
        self._responded = False

    @property
    def responded(self) -> bool:
        """Whether the response was enqueued (or, for a notification, the handler finished)."""
        return self._responded

    def after_response(self, callback: AfterResponse) -> None:
        """Run ``callback`` right after this request's response frame is enqueued.

        Hooks run in registration order on the event loop, after the response and before
        anything enqueued later, so frames they send follow the response on the wire. For a
        notification they run when its handler returns. A hook registered once the response is
        already out runs at once. A hook that raises is logged; the others still run.

        :param callback: a synchronous callable taking no arguments.
        """
        if self._responded:
            self.peer._run_hook(self, callback)
        else:
            self._hooks.append(callback)

    def _mark_responded(self) -> list[AfterResponse]:
        self._responded = True
        hooks, self._hooks = self._hooks, []
        return hooks


def current_request() -> RequestContext | None:
    """Return the inbound request being handled in this task, if any.

    :returns: the context set by the peer, or ``None`` outside a handler.
    """
    return _CURRENT.get()


def after_response(callback: AfterResponse) -> None:
    """Register an after-response hook for the request handled in this task.

    :param callback: a synchronous callable taking no arguments.
    :raises RuntimeError: called outside a request handler.
    """
    ctx = _CURRENT.get()
    if ctx is None:
        raise RuntimeError("after_response() called outside an inbound request handler")
    ctx.after_response(callback)


class OutboundRequest:
    """A request this peer sent, waiting for the other side's response.

    Await it (or :meth:`wait`) for the result; an error response raises
    :class:`~hermes_core.rpc.RpcError`; a ``null`` result comes back as ``{}``. Call
    :meth:`discard` when giving up so a late response is dropped (it is logged as unknown).

    :ivar id: the integer id on the wire (per peer, from 0).
    :ivar method: the method name.
    :ivar future: resolved by the peer's correlator.
    """

    __slots__ = ("_pending", "future", "id", "method")

    def __init__(
        self,
        request_id: int,
        method: str,
        future: asyncio.Future[Any],
        pending: dict[int, asyncio.Future[Any]],
    ) -> None:
        """Track one sent request.

        :param request_id: its wire id.
        :param method: its method.
        :param future: the future the correlator resolves.
        :param pending: the peer's table of pending futures, cleaned by :meth:`discard`.
        """
        self.id = request_id
        self.method = method
        self.future = future
        self._pending = pending

    def __await__(self) -> Generator[Any, None, Any]:
        return self.wait().__await__()

    async def wait(self, timeout: float | None = None) -> Any:
        """Wait for the response, then forget the request.

        :param timeout: seconds to wait; ``None`` waits for ever.
        :returns: the result (``{}`` for a null result).
        :raises RpcError: the other side answered with an error.
        :raises RpcTimeout: no response in time.
        :raises PeerClosedError: the connection ended first.
        """
        try:
            if timeout is None:
                return await self.future
            try:
                return await asyncio.wait_for(self.future, timeout)
            except TimeoutError:
                raise RpcTimeout(self.method, self.id, timeout) from None
        finally:
            self.discard()

    def discard(self) -> None:
        """Stop waiting: drop the pending entry and cancel the future if still open."""
        if self._pending.get(self.id) is self.future:
            del self._pending[self.id]
        if not self.future.done():
            self.future.cancel()


def log_hook_failure(logger: logging.Logger, ctx: RequestContext, exc: BaseException) -> None:
    """Log an after-response hook that raised.

    :param logger: the peer's logger.
    :param ctx: the request the hook belonged to.
    :param exc: what it raised.
    """
    logger.error("after-response hook of %s (id %r) failed", ctx.method, ctx.id, exc_info=exc)


class Correlator:
    """Ids and futures of this side's outbound requests; matches responses to them."""

    def __init__(self, loop: asyncio.AbstractEventLoop, logger: logging.Logger, name: str) -> None:
        """Start with no pending request; the first id is 0.

        :param loop: the running loop (futures are created on it).
        :param logger: where unknown ids are reported.
        :param name: the transport name for log lines.
        """
        self._loop = loop
        self._log = logger
        self._name = name
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0

    def allocate(self) -> int:
        """Return the next request id.

        :returns: an integer, one more than the previous.
        """
        request_id = self._next_id
        self._next_id += 1
        return request_id

    def register(self, request_id: int, method: str) -> OutboundRequest:
        """Start waiting for the response to an id returned by :meth:`allocate`.

        :param request_id: the id that was sent.
        :param method: its method, for errors and logs.
        :returns: the pending request.
        """
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[request_id] = future
        return OutboundRequest(request_id, method, future, self._pending)

    def resolve(self, message: dict[str, Any]) -> None:
        """Deliver a response frame to whoever waits on its id; log and drop it otherwise.

        :param message: a decoded object with ``result`` or ``error`` and no ``method``.
        """
        request_id = message.get("id")
        # Only ints are ours; the type check also keeps True from matching id 1.
        future = self._pending.pop(request_id, None) if type(request_id) is int else None
        if future is None:
            if type(request_id) is int and 0 <= request_id < self._next_id:
                # Ours, but given up on (timeout, cancel): expected after a cancel, so quieter.
                self._log.info("%s: dropping a late response to abandoned id %d", self._name, request_id)
            else:
                self._log.warning("%s: dropping a response with unknown id %r", self._name, request_id)
            return
        if future.done():
            return
        if "error" in message:
            future.set_exception(error_from_wire(message["error"]))
        else:
            result = message.get("result")
            future.set_result({} if result is None else result)

    def fail_all(self, reason: str) -> None:
        """Fail every pending request with :class:`PeerClosedError`.

        :param reason: the message of the error.
        """
        pending = list(self._pending.values())
        self._pending.clear()
        for future in pending:
            if not future.done():
                future.set_exception(PeerClosedError(reason))
