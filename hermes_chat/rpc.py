"""JSON-RPC over one :class:`~hermes_chat.link.Link`: requests matched to responses by id.

Responses may arrive in any order (docs/protocols/tui-gateway.md, "Responses are matched by
id"), so every request waits on its own future. Events go to a callback in arrival order. When
the link ends, every pending request fails with :class:`ConnectionLost`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from hermes_chat import trace
from hermes_chat.link import Frame, Link


class RpcError(Exception):
    """An error response: ``code``, ``message`` and ``data`` as the gateway sent them."""

    def __init__(self, code: Any, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ConnectionLost(Exception):
    """The link ended before the response came (or there is no link right now)."""


class Rpc:
    """One connection's request table and reader."""

    def __init__(self, link: Link, on_event: Callable[[Frame], None]) -> None:
        self.link = link
        self._on_event = on_event
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.closed = False

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its result.

        :raises RpcError: the gateway answered with an error.
        :raises ConnectionLost: the link ended first.
        """
        if self.closed:
            raise ConnectionLost(self.link.ended or "not connected")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame: Frame = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            frame["params"] = params
        if trace.ON:
            trace.frame(">", frame)
        try:
            await self.link.send(frame)
        except (ConnectionError, OSError, RuntimeError) as exc:
            self._pending.pop(request_id, None)
            raise ConnectionLost(self.link.ended or str(exc) or "the connection is gone") from None
        try:
            return await future
        finally:
            self._pending.pop(request_id, None)

    async def pump(self) -> str:
        """Read frames until the link ends; return why it ended."""
        try:
            while True:
                frame = await self.link.receive()
                if frame is None:
                    break
                if trace.ON:
                    trace.frame("<", frame)
                if self._dispatch(frame):
                    # Let the caller act on its response (say, adopt the session it created)
                    # before the events that follow it are delivered.
                    await asyncio.sleep(0)
        except (ConnectionError, OSError) as exc:
            self.link.ended = self.link.ended or f"the connection failed: {exc}"
        finally:
            self.closed = True
            reason = self.link.ended or "the connection ended"
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionLost(reason))
            self._pending.clear()
        return self.link.ended or "the connection ended"

    def _dispatch(self, frame: Frame) -> bool:
        """Deliver one frame; return whether it answered a pending request."""
        if frame.get("method") == "event":
            params = frame.get("params")
            if isinstance(params, dict):
                self._on_event(params)
            return False
        request_id = frame.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            return False
        error = frame.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcError(error.get("code"), str(error.get("message", "")), error.get("data"))
            )
        else:
            future.set_result(frame.get("result"))
        return True
