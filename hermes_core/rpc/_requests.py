"""Answering the requests an :class:`~hermes_core.rpc.RpcPeer` receives.

The peer reads and splits lines and hands each request or notification to
:class:`InboundRequests`, which checks its envelope, calls ``fast_path`` (an answer there is sent
at once), else ``prepare`` and then ``dispatch`` on a task of its own, turns what comes back
into the response frame, and runs the request's after-response hooks. It owns those handler
tasks, so the peer's :meth:`~hermes_core.rpc.RpcPeer.aclose` asks it to end them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes_core.rpc._calls import (
    _CURRENT,
    AfterResponse,
    Dispatch,
    FastPath,
    Message,
    Prepare,
    RequestContext,
    log_hook_failure,
)
from hermes_core.rpc._inbound import check_request, response_frame
from hermes_core.rpc._outbox import Outbox
from hermes_core.rpc._wire import INVALID_PARAMS, RpcError, encode_frame, error_response

if TYPE_CHECKING:
    from hermes_core.rpc._peer import RpcPeer

_UNSERIALISABLE = (TypeError, ValueError, RecursionError)


class InboundRequests:
    """The inbound half of one peer: requests in, responses out, handler tasks kept.

    :param peer: the peer the requests arrive on (each :class:`RequestContext` names it).
    :param outbox: where response frames are enqueued.
    :param log: where diagnostics go.
    :param dispatch: the coroutine that answers what ``fast_path`` does not.
    :param fast_path: optional synchronous answerer, called first.
    :param prepare: optional synchronous hook called before ``dispatch`` is scheduled.
    """

    def __init__(
        self,
        peer: RpcPeer,
        outbox: Outbox,
        log: logging.Logger,
        *,
        dispatch: Dispatch,
        fast_path: FastPath | None,
        prepare: Prepare | None,
    ) -> None:
        self._peer = peer
        self._options = peer.options
        self._loop = asyncio.get_running_loop()
        self._outbox = outbox
        self._log = log
        self._dispatch = dispatch
        self._fast_path = fast_path
        self._prepare = prepare
        self._handlers: set[asyncio.Task[None]] = set()

    async def end(self, cancel_handlers: bool, timeout: float) -> None:
        """End the handler tasks: cancel them at once, or first let them finish for ``timeout``.

        :param cancel_handlers: cancel at once (their requests get no response).
        :param timeout: bound, in seconds, for handlers finishing and for the cancelled ending.
        """
        if not self._handlers:
            return
        handlers = list(self._handlers)
        if not cancel_handlers:
            _, handlers_left = await asyncio.wait(handlers, timeout=timeout)
            handlers = list(handlers_left)
        for task in handlers:
            task.cancel()
        if handlers:
            await asyncio.wait(handlers, timeout=timeout)

    def handle(self, message: Message) -> None:
        """Check a request's envelope and answer it: ``fast_path``, else ``prepare`` and a
        ``dispatch`` task."""
        is_notification = "id" not in message
        echo_id, error = check_request(message, self._options)
        if error is not None:
            if is_notification and error.code == INVALID_PARAMS:
                self._log.debug("%s: notification with bad params: %s", self._options.name, message)
            else:
                self.send_error(echo_id, error)
            return
        ctx = RequestContext(self._peer, message, is_notification)
        token = _CURRENT.set(ctx)
        try:
            if self._fast_path is not None:
                response = self._call_sync(ctx, self._fast_path)
                if response is not None:
                    self._finish(ctx, response)
                    return
            failure = self._call_sync(ctx, self._prepare, keep_result=False) if self._prepare else None
            if failure is not None:
                self._finish(ctx, failure)
                return
        finally:
            _CURRENT.reset(token)
        task = self._loop.create_task(self._run_handler(ctx))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    def _call_sync(
        self, ctx: RequestContext, hook: Callable[[Message], Any], keep_result: bool = True
    ) -> Mapping[str, Any] | None:
        """Call ``fast_path`` or ``prepare``; an exception becomes an error response."""
        try:
            result = hook(ctx.message)
        except Exception as exc:
            return self._error_answer(ctx, exc)
        return result if keep_result else None

    async def _run_handler(self, ctx: RequestContext) -> None:
        _CURRENT.set(ctx)
        response: Mapping[str, Any] | None
        try:
            response = await self._dispatch(ctx.message)
        except Exception as exc:
            response = self._error_answer(ctx, exc)
        self._finish(ctx, response)

    def _error_answer(self, ctx: RequestContext, exc: Exception) -> dict[str, Any]:
        error = exc if isinstance(exc, RpcError) else self._internal(ctx, exc, "handler raised")
        return {"error": error.to_error()}

    # ------------------------------------------------------------------ responding

    def _finish(self, ctx: RequestContext, response: Mapping[str, Any] | None) -> None:
        if not ctx.is_notification:
            frame = response_frame(
                ctx.id, response, self._options, lambda what: self._internal(ctx, None, what)
            )
            try:
                data = encode_frame(frame)
            except _UNSERIALISABLE as exc:
                data = encode_frame(
                    error_response(ctx.id, self._internal(ctx, exc, "unserialisable response"))
                )
            self._outbox.put(data)
        for hook in ctx._mark_responded():
            self.run_hook(ctx, hook)

    def run_hook(self, ctx: RequestContext, hook: AfterResponse) -> None:
        """Run one after-response hook; a failure is logged."""
        try:
            hook()
        except Exception as exc:
            log_hook_failure(self._log, ctx, exc)

    def _internal(self, ctx: RequestContext, exc: BaseException | None, what: str) -> RpcError:
        error_id = uuid.uuid4().hex
        name, method, request_id = self._options.name, ctx.method, ctx.id
        log = "%s: internal error %s in %s (id %r): %s"
        self._log.error(log, name, error_id, method, request_id, what, exc_info=exc)
        return self._options.internal_error(error_id)

    def send_error(self, request_id: Any, error: RpcError) -> None:
        """Answer ``request_id`` (None when unreadable) with ``error``."""
        self._outbox.put(encode_frame(error_response(request_id, error)))
