"""A TUI gateway client over stdio (``hermes tui``) or WebSocket (``hermes tui --ws``).

Hand-written transport around the generated models: requests are JSON-RPC 2.0 frames, one per
line on stdio or one per WebSocket text message; every ``event`` notification is parsed into its
payload model (:data:`hermes_client.tui_methods.EVENTS`) and queued for :meth:`TuiClient.next_event`.
The typed calls (``await client.session_create(...)``) come from
:class:`hermes_client.tui_methods.TypedCalls`; :meth:`TuiClient.call` reaches any other method.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from hermes_client.tui_methods import EVENTS, TypedCalls
from hermes_client.tui_models import ReadyPayload

#: Longest line accepted from the gateway's stdout (a snapshot with a long transcript is big).
MAX_LINE = 64 * 1024 * 1024


class RpcError(Exception):
    """An error response: ``code``, ``message`` and ``data`` as the gateway sent them."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.code: int = int(error.get("code", 0))
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        super().__init__(f"{self.code} {self.message}")


class ConnectionClosed(Exception):
    """The gateway went away (the process ended or the socket closed)."""


@dataclass(frozen=True)
class Event:
    """One ``event`` notification: its type, session, sequence number and payload.

    ``payload`` is the generated model of that event type, or a plain dict when the export does
    not type it yet; ``raw`` is the payload as received.
    """

    type: str
    session_id: str
    seq: int | None
    payload: BaseModel | dict[str, Any]
    raw: dict[str, Any] = field(repr=False)


def parse_event(params: dict[str, Any]) -> Event:
    """Parse an ``event`` notification's params into an :class:`Event` (unknown types stay dicts)."""
    raw = params.get("payload") or {}
    model = EVENTS.get(str(params.get("type")))
    payload: BaseModel | dict[str, Any] = model.model_validate(raw) if model is not None else dict(raw)
    seq = params.get("seq")
    return Event(str(params["type"]), str(params.get("session_id", "")), seq, payload, raw)


class TuiClient(TypedCalls):
    """One connection to a TUI gateway; make one with :meth:`spawn` or :meth:`connect`."""

    def __init__(self, send: Callable[[str], Awaitable[None]], close: Callable[[], Awaitable[None]]) -> None:
        self._send = send
        self._close = close
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._events: asyncio.Queue[Event | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self.ready: ReadyPayload | None = None
        #: the gateway process, for a client made by :meth:`spawn`
        self.process: asyncio.subprocess.Process | None = None

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str] = ("hermes", "tui"),
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = asyncio.subprocess.DEVNULL,
        ready_timeout: float = 30,
    ) -> TuiClient:
        """Start ``argv`` (the gateway on stdio) and wait for its ``gateway.ready``."""
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
            limit=MAX_LINE,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        async def send(text: str) -> None:
            stdin.write(text.encode() + b"\n")
            await stdin.drain()

        async def close() -> None:
            with contextlib.suppress(OSError):
                stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()

        async def lines() -> Any:
            while line := await stdout.readline():
                yield line.decode()

        client = cls(send, close)
        client.process = proc
        await client._start(lines(), ready_timeout)
        return client

    @classmethod
    async def connect(
        cls, url: str, *, headers: dict[str, str] | None = None, ready_timeout: float = 30
    ) -> TuiClient:
        """Open a WebSocket to ``hermes tui --ws`` (``ws://host:port/``) and wait for ``gateway.ready``."""
        import aiohttp

        http = aiohttp.ClientSession()
        try:
            ws = await http.ws_connect(url, headers=headers, max_msg_size=MAX_LINE)
        except BaseException:
            await http.close()
            raise

        async def send(text: str) -> None:
            await ws.send_str(text)

        async def close() -> None:
            await ws.close()
            await http.close()

        async def messages() -> Any:
            async for message in ws:
                if message.type == aiohttp.WSMsgType.TEXT:
                    yield message.data

        client = cls(send, close)
        await client._start(messages(), ready_timeout)
        return client

    async def _start(self, frames: Any, ready_timeout: float) -> None:
        self._reader = asyncio.get_running_loop().create_task(self._read(frames))
        first = await self.next_event("gateway.ready", timeout=ready_timeout)
        assert isinstance(first.payload, ReadyPayload)
        self.ready = first.payload

    async def _read(self, frames: Any) -> None:
        try:
            async for text in frames:
                try:
                    frame = json.loads(text)
                except ValueError:
                    continue  # not a frame: the gateway's stdout carries frames only
                self._on_frame(frame)
        finally:
            self._closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed("the gateway closed the connection"))
            self._events.put_nowait(None)

    def _on_frame(self, frame: dict[str, Any]) -> None:
        if frame.get("method") == "event":
            self._events.put_nowait(parse_event(frame.get("params") or {}))
            return
        future = self._pending.pop(frame.get("id"), None)  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in frame:
            future.set_exception(RpcError(frame["error"]))
        else:
            future.set_result(frame.get("result"))

    # -- requests and events -------------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request and return its ``result``; raise :class:`RpcError` on an error."""
        if self._closed:
            raise ConnectionClosed("the gateway closed the connection")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self._send(json.dumps(frame, ensure_ascii=False))
        return await future

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call any method (typed or not) with plain params; return the plain result."""
        result = await self.request(method, params or {})
        return dict(result) if isinstance(result, dict) else {"result": result}

    async def next_event(
        self, type_: str | None = None, *, session_id: str | None = None, timeout: float | None = None
    ) -> Event:
        """Return the next event (of ``type_`` / for ``session_id`` when given; others are skipped).

        :raises ConnectionClosed: the connection ended first.
        :raises TimeoutError: none came within ``timeout`` seconds.
        """

        async def wait() -> Event:
            while True:
                event = await self._events.get()
                if event is None:
                    self._events.put_nowait(None)
                    raise ConnectionClosed("the gateway closed the connection")
                if (type_ is None or event.type == type_) and (
                    session_id is None or event.session_id == session_id
                ):
                    return event

        return await asyncio.wait_for(wait(), timeout)

    async def close(self) -> None:
        """Close the connection (on stdio: end the gateway's input and wait for it to exit)."""
        await self._close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 10)

    async def __aenter__(self) -> TuiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
