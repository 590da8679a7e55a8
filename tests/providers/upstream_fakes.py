"""A scriptable fake model API: a real aiohttp server on 127.0.0.1 for provider tests.

Each test registers what a route answers — JSON, an SSE stream, a stream that stalls or one
whose connection is cut — and afterwards reads what the provider sent in ``requests``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Received:
    """One request as the fake saw it."""

    method: str
    path: str
    headers: dict[str, str]
    query: dict[str, str]
    body: Any


def openai_frame(payload: Any) -> bytes:
    """Return one ``data:`` frame of an OpenAI-style stream."""
    return f"data: {json.dumps(payload)}\n\n".encode()


OPENAI_DONE = b"data: [DONE]\n\n"


def anthropic_frame(payload: dict[str, Any]) -> bytes:
    """Return one Anthropic-style frame: ``event:`` named after the payload's ``type``."""
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def closed_port() -> int:
    """Return a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeUpstream:
    """A loopback HTTP server whose routes each test scripts.

    Use as ``async with FakeUpstream() as up:``; ``up.url`` is ``http://127.0.0.1:<port>``.
    """

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._routes: dict[tuple[str, str], Handler] = {}
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> FakeUpstream:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, shutdown_timeout=0.2, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release.set()  # wake handlers that are deliberately stalling
        if self._runner is not None:
            await self._runner.cleanup()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.requests.append(
            Received(request.method, request.path, dict(request.headers), dict(request.query), body)
        )
        handler = self._routes.get((request.method, request.path))
        if handler is None:
            return web.json_response({"error": {"message": f"no route {request.path}"}}, status=404)
        return await handler(request)

    def on(self, method: str, path: str, handler: Handler) -> None:
        """Answer ``method path`` with ``handler``."""
        self._routes[(method, path)] = handler

    def json(
        self, method: str, path: str, body: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        """Answer with a JSON body."""

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.json_response(body, status=status, headers=headers)

        self.on(method, path, handler)

    def silent(self, method: str, path: str) -> None:
        """Answer ``method path`` with nothing at all until the fake shuts down."""

        async def handler(request: web.Request) -> web.StreamResponse:
            await self._release.wait()
            return web.Response(status=204)  # the client has long gone

        self.on(method, path, handler)

    def stream(
        self,
        path: str,
        frames: Sequence[bytes],
        *,
        then: str = "end",
        split: bool = False,
    ) -> None:
        """Answer ``POST path`` with an event stream of ``frames``.

        :param then: ``end`` (finish normally), ``stall`` (keep the connection open and send
            nothing more) or ``abort`` (cut the TCP connection).
        :param split: write every frame in two pieces, cut mid-line, to exercise reassembly.
        """

        async def handler(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for frame in frames:
                if split and len(frame) > 2:
                    middle = len(frame) // 2
                    await response.write(frame[:middle])
                    await asyncio.sleep(0.005)
                    await response.write(frame[middle:])
                else:
                    await response.write(frame)
            if then == "stall":
                await self._release.wait()
                return response  # the client has long gone; nothing more to send
            elif then == "abort":
                await asyncio.sleep(0.02)  # let the client read what was sent first
                assert request.transport is not None
                request.transport.abort()
                return response
            await response.write_eof()
            return response

        self.on("POST", path, handler)

    def replies(self, path: str, replies: Sequence[Sequence[bytes]]) -> None:
        """Answer the calls to ``POST path`` in order, each with the next event stream.

        A call beyond the list gets a 500 error body, which the test will notice.
        """
        queue = [list(frames) for frames in replies]

        async def handler(request: web.Request) -> web.StreamResponse:
            if not queue:
                return web.json_response({"error": {"message": "no reply left"}}, status=500)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for frame in queue.pop(0):
                await response.write(frame)
            await response.write_eof()
            return response

        self.on("POST", path, handler)

    def last(self) -> Received:
        """Return the most recent request other than a model-list probe (``GET …/models``).

        Hermes probes a user-defined endpoint's model list in the background (the catalog's
        policy on open), so a probe may arrive after the call a test looks for; the probes stay
        in :attr:`requests`.
        """
        calls = [r for r in self.requests if not (r.method == "GET" and r.path.endswith("/models"))]
        assert calls, "the fake upstream received no request"
        return calls[-1]
