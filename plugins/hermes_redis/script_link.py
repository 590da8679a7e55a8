"""One pipelined connection that runs the budget ledger's Lua script (docs/reference/budgets.md#cost).

Every budgeted model call makes two script calls (reserve, settle), and the reservation is on
the way to the call's first token. redis-py's asyncio client spends about 0.2 ms of CPU on each
(pool checkout, argument encoding, its timeouts and bookkeeping) and several loop turns. This
link writes each call as one ``EVALSHA`` whose bytes are mostly encoded once per bucket, keeps
calls in flight on one connection (Redis answers in order: a FIFO of futures matches them), and
parses with hiredis, the C parser redis-py itself uses: about a quarter of the CPU and of the
round trip. It speaks only what the ledger needs: ``AUTH``/``SELECT`` at connect, ``EVALSHA``,
and ``EVAL`` once when the server's script cache is empty (a restart, ``SCRIPT FLUSH``).

Failures fail closed: a connection that cannot be made within ``connect_timeout_s``, is lost, or
leaves a reply unanswered for ``reply_timeout_s`` makes the calls waiting on it raise
:class:`LinkDown` (the next call connects again). ``rediss://`` URLs are not spoken here
(:func:`link_for` returns None and the ledger uses redis-py).
"""

from __future__ import annotations

import asyncio
import hashlib
import select
from collections import deque
from collections.abc import Sequence
from typing import Any, cast


class LinkDown(Exception):
    """The link to Redis failed (not connected, lost, or a reply overdue)."""


class ScriptRefused(Exception):
    """Redis answered the script call with an error other than a missing script."""


def bulk(value: str) -> bytes:
    """Return ``value`` as a RESP bulk string."""
    raw = value.encode()
    return b"$%d\r\n%s\r\n" % (len(raw), raw)


def command(*parts: str) -> bytes:
    """Return a RESP command of ``parts``."""
    return b"*%d\r\n" % len(parts) + b"".join(bulk(p) for p in parts)


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        import hiredis

        self._parser = hiredis.Reader(encoding="utf-8", errors="replace")
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._parser.feed(data)
        while True:
            try:
                reply = self._parser.gets()
            except Exception as exc:  # a malformed reply: nothing after it can be matched
                self.fail(LinkDown(f"unreadable reply: {exc}"))
                return
            if reply is False:
                return
            if not self.waiting:
                self.fail(LinkDown("a reply nobody asked for"))
                return
            future = self.waiting.popleft()
            if not future.done():  # a caller that gave up (cancelled) leaves its place in line
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(LinkDown(f"connection lost: {exc}" if exc else "connection closed by Redis"))

    def fail(self, exc: Exception) -> None:
        """Close the connection; every call waiting on it raises ``exc``."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(exc)

    def gone(self) -> bool:
        """Tell whether an idle connection was closed by the other side (Redis restarted, or
        dropped it for idleness) although the loop has not heard of it yet: with no call in flight
        nothing may be readable. One non-blocking ``select``, as redis-py checks a pooled
        connection before reusing it."""
        if self.closed:
            return True
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        try:
            readable = select.select([sock.fileno()], [], [], 0)[0]
        except (OSError, ValueError):
            readable = [True]
        if readable:
            self.fail(LinkDown("closed while idle"))
            return True
        return False

    def send(self, payload: bytes) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        assert self.transport is not None
        self.transport.write(payload)
        return future


class ScriptLink:
    """Runs one Lua script on one Redis server over a pipelined connection.

    :param target: where: ``("tcp", host, port)`` or ``("unix", path)``.
    :param script: the Lua source.
    :param db: the database number. :param username: :param password: ``AUTH``, when set.
    :param connect_timeout_s: how long connecting may take. :param reply_timeout_s: how long a
        reply may take.
    """

    def __init__(
        self,
        target: tuple[Any, ...],
        script: str,
        *,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        connect_timeout_s: float = 2.0,
        reply_timeout_s: float = 5.0,
    ) -> None:
        self._target = target
        self._script = script
        self._sha = bulk(hashlib.sha1(script.encode()).hexdigest())
        self._db = db
        self._auth = (username, password) if password else None
        self._connect_timeout = connect_timeout_s
        self._reply_timeout = reply_timeout_s
        self._proto: _Protocol | None = None
        self._connecting: asyncio.Future[_Protocol] | None = None

    async def call(self, keys: Sequence[bytes], args: bytes, nargs: int) -> Any:
        """Run the script with ``keys`` (each a RESP bulk string, see :func:`bulk`) and the
        ``nargs`` arguments whose bulk strings ``args`` holds back to back; return its reply.

        :raises LinkDown: Redis cannot be reached or did not answer in time.
        :raises ScriptRefused: Redis answered with an error.
        """
        count = 3 + len(keys) + nargs
        tail = bulk(str(len(keys))) + b"".join(keys) + args
        reply = await self._send(b"*%d\r\n$7\r\nEVALSHA\r\n%s%s" % (count, self._sha, tail))
        if _is_error(reply) and str(reply).startswith("NOSCRIPT"):
            # The server's script cache is empty: EVAL sends the source once and caches it.
            reply = await self._send(b"*%d\r\n$4\r\nEVAL\r\n%s%s" % (count, bulk(self._script), tail))
        if _is_error(reply):
            raise ScriptRefused(str(reply))
        return reply

    async def _send(self, payload: bytes) -> Any:
        proto = self._proto
        if proto is None or proto.closed or (not proto.waiting and proto.gone()):
            proto = await self._connect()
        future = proto.send(payload)
        overdue = asyncio.get_running_loop().call_later(
            self._reply_timeout, proto.fail, LinkDown(f"no reply within {self._reply_timeout:g} s")
        )
        try:
            return await future
        finally:
            overdue.cancel()

    async def _connect(self) -> _Protocol:
        # Callers arriving while a connection is being made wait for that one.
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open())
        connecting = self._connecting
        try:
            return await asyncio.shield(connecting)
        finally:
            if self._connecting is connecting and connecting.done():
                self._connecting = None

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        proto: _Protocol | None = None
        try:
            async with asyncio.timeout(self._connect_timeout):
                if self._target[0] == "unix":
                    _, proto = await loop.create_unix_connection(_Protocol, self._target[1])
                else:
                    _, proto = await loop.create_connection(_Protocol, self._target[1], self._target[2])
                hello: list[asyncio.Future[Any]] = []
                if self._auth is not None:
                    user, password = self._auth
                    parts = ("AUTH", user, password) if user else ("AUTH", password)
                    hello.append(proto.send(command(*(p or "" for p in parts))))
                if self._db:
                    hello.append(proto.send(command("SELECT", str(self._db))))
                for reply in [await f for f in hello]:
                    if _is_error(reply):
                        proto.fail(LinkDown(str(reply)))
                        raise LinkDown(f"Redis refused the connection: {reply}")
        except BaseException as exc:
            if proto is not None:
                proto.fail(LinkDown("connection abandoned"))
            if isinstance(exc, TimeoutError):
                raise LinkDown(f"no connection within {self._connect_timeout:g} s") from exc
            if isinstance(exc, OSError):
                raise LinkDown(str(exc)) from exc
            raise
        self._proto = proto
        return proto

    async def aclose(self) -> None:
        """Close the connection (calls waiting on it raise :class:`LinkDown`)."""
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        if self._proto is not None:
            self._proto.fail(LinkDown("closed"))
            self._proto = None


def _is_error(reply: Any) -> bool:
    import hiredis

    return isinstance(reply, hiredis.ReplyError)


def link_for(url: str, script: str, **timeouts: float) -> ScriptLink | None:
    """Return a link to the server of a ``redis://`` or ``unix://`` URL (None for others, e.g.
    ``rediss://``: redis-py speaks TLS)."""
    from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection, parse_url

    options = parse_url(url)
    kind = options.get("connection_class")
    if kind is SSLConnection or (kind is not None and kind is not UnixDomainSocketConnection):
        return None
    target: tuple[Any, ...]
    if kind is UnixDomainSocketConnection:
        target = ("unix", options["path"])
    else:
        target = ("tcp", options.get("host", "localhost"), int(options.get("port", 6379)))
    return ScriptLink(
        target,
        script,
        db=int(options.get("db", 0) or 0),
        username=options.get("username"),
        password=options.get("password"),
        **timeouts,
    )
