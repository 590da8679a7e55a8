"""The :class:`RpcPeer` itself: reading frames, sending, lifecycle (requests: ``_requests.py``).

Public names are re-exported by :mod:`hermes_core.rpc`, whose docstring describes the flow.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from hermes_core.rpc._calls import (
    AfterResponse,
    CloseReason,
    Correlator,
    Dispatch,
    FastPath,
    OutboundRequest,
    Prepare,
    RequestContext,
    after_response,
)
from hermes_core.rpc._io import ChunkReader, FdReader, FrameHook, FrameWriter
from hermes_core.rpc._outbox import Outbox
from hermes_core.rpc._requests import InboundRequests
from hermes_core.rpc._wire import (
    INVALID_REQUEST,
    MIB,
    PARSE_ERROR,
    TUI_OPTIONS,
    LineSplitter,
    PeerClosedError,
    PeerOptions,
    RpcError,
    decode_line,
    encode_frame,
)

_log = logging.getLogger("hermes_core.rpc")
_UNSERIALISABLE = (TypeError, ValueError, RecursionError)


class RpcPeer:
    """One bidirectional NDJSON JSON-RPC connection.

    Must be created on a running event loop. ``reader`` / ``writer`` are file descriptors
    (stdin and the protected stdout in production, ``os.pipe()`` ends in tests) or asyncio
    stream objects; descriptors and streams stay owned by the caller. The writer starts at once,
    so frames can be sent before :meth:`run` reads anything.

    :ivar options: the transport options in force.
    :ivar closed: an :class:`asyncio.Event` set when :meth:`run` ends or would end: input
        ended, output lost, or :meth:`aclose`.
    """

    def __init__(
        self,
        *,
        reader: int | ChunkReader,
        writer: int | FrameWriter,
        dispatch: Dispatch,
        options: PeerOptions = TUI_OPTIONS,
        fast_path: FastPath | None = None,
        prepare: Prepare | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        """Create the peer and start its writer.

        :param reader: a readable descriptor, or an object with ``async read(n) -> bytes``.
        :param writer: a writable descriptor (pipe, socket, terminal or regular file; written
            from a thread), or an object with ``write(bytes)`` and ``async drain()``.
        :param dispatch: the coroutine that handles each request not answered by ``fast_path``.
        :param options: per-transport behaviour (``TUI_OPTIONS``, ``ACP_OPTIONS``).
        :param fast_path: optional synchronous answerer, called first for every request and
            notification (a response returned for a notification is dropped).
        :param prepare: optional synchronous hook called before ``dispatch`` is scheduled.
        :param logger: where diagnostics go (never stdout); defaults to ``hermes_core.rpc``.
        """
        self._loop = asyncio.get_running_loop()
        self.options = options
        self._log = logger or _log
        self._reader: ChunkReader = FdReader(reader) if isinstance(reader, int) else reader
        self._own_reader = self._reader if isinstance(self._reader, FdReader) else None
        self._outbox = Outbox(writer, self._loop, self._output_lost)
        self._calls = Correlator(self._loop, self._log, options.name)
        self._splitter = LineSplitter(options.max_line_bytes)
        self._inbound = InboundRequests(
            self, self._outbox, self._log, dispatch=dispatch, fast_path=fast_path, prepare=prepare
        )
        self._pump: asyncio.Task[None] | None = None
        self._reason: CloseReason | None = None
        self._input_done = False
        self._closing = False
        self.closed = asyncio.Event()

    @property
    def close_reason(self) -> CloseReason | None:
        """Why the peer stopped (``None`` while running)."""
        return self._reason

    @property
    def pending_bytes(self) -> int:
        """Bytes enqueued but not yet written."""
        return self._outbox.pending_bytes

    async def run(self) -> CloseReason:
        """Read and handle frames until end of input or loss of the output.

        Handlers still running are not cancelled, and the writer keeps working after EOF, so the
        transport can finish turns and send final events before :meth:`aclose`. Outbound
        requests still pending fail with :class:`PeerClosedError`.

        :returns: ``"eof"``, ``"output_lost"`` or ``"closed"``.
        :raises RuntimeError: called twice.
        """
        if self._pump is not None:
            raise RuntimeError("RpcPeer.run() may only be called once")
        if not self.closed.is_set():
            self._pump = self._loop.create_task(self._read_loop(), name="hermes-rpc-reader")
            try:
                await self.closed.wait()
            except asyncio.CancelledError:
                self._pump.cancel()
                raise
        assert self._reason is not None
        return self._reason

    async def aclose(self, *, cancel_handlers: bool = True, timeout: float = 2.0) -> None:
        """Stop reading, end the handler tasks, flush and stop the writer. Idempotent.

        :param cancel_handlers: ``True`` cancels handler tasks still running (their requests
            get no response); ``False`` first lets them finish for up to ``timeout``, then
            cancels the stragglers.
        :param timeout: bound, in seconds, for each of: handlers ending, flushing, writer ending.
        """
        if self._closing:
            return
        self._closing = True
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
            await asyncio.wait([self._pump], timeout=timeout)
        self._end_input("closed")
        await self._inbound.end(cancel_handlers, timeout)
        await self._outbox.close(timeout)

    # ------------------------------------------------------------------ sending

    def send(self, frame: Mapping[str, Any]) -> bool:
        """Enqueue any frame (events, notifications built by the transport).

        :param frame: a JSON object.
        :returns: ``False`` if dropped: output gone, peer closed, or not serialisable (NaN,
            unknown types; logged).
        """
        try:
            data = encode_frame(frame)
        except _UNSERIALISABLE as exc:
            self._log.error("%s: dropping a frame that cannot be serialised: %s", self.options.name, exc)
            return False
        return self._outbox.put(data)

    def send_bytes(self, data: bytes) -> bool:
        """Enqueue an already-encoded frame, e.g. one kept from ``encode_frame`` for replay.

        :param data: exactly one frame ending in its only ``b"\\n"``.
        :returns: ``False`` if dropped because the output is gone or the peer closed.
        :raises ValueError: ``data`` is not exactly one newline-terminated frame.
        """
        if not data.endswith(b"\n") or data.count(b"\n") != 1:
            raise ValueError("send_bytes() needs exactly one frame ending in a single newline")
        return self._outbox.put(data)

    def arm_frame_hook(self, hook: FrameHook) -> None:
        """Pass every frame sent from now on through ``hook`` just before it is written.

        For what a transport learns only after its writer started: ``hermes acp`` answers
        ``initialize`` before the kernel (and so a scenario's faults) is known, and arms the
        faults once it is (docs/reference/scenarios.md#faults-on-stdio). Frames already sent are
        written as they were; arming again replaces the hook for the frames that follow.

        :param hook: what to write in place of each frame (:class:`hermes_core.rpc.FrameHook`).
        """
        self._outbox.arm(hook)

    def notify(self, method: str, params: Any = None) -> bool:
        """Send a notification (no id, no response).

        :param method: the method name.
        :param params: the params; ``None`` leaves the member out.
        :returns: as :meth:`send`.
        """
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        return self.send(frame)

    def start_request(self, method: str, params: Any = None) -> OutboundRequest:
        """Send a request and return a handle to await its response.

        Ids are integers from 0, per peer. Call :meth:`OutboundRequest.discard` (or let
        :meth:`OutboundRequest.wait` do it) when abandoning it; a late response is then dropped.

        :param method: the method name.
        :param params: the params; ``None`` leaves the member out.
        :returns: the pending request.
        :raises PeerClosedError: input ended or output lost, so no response could arrive.
        :raises TypeError: ``params`` is not serialisable (``ValueError`` for NaN).
        """
        if self._input_done or not self._outbox.open:
            raise PeerClosedError(f"cannot send {method}: the connection is closed")
        request_id = self._calls.allocate()
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        data = encode_frame(frame)
        pending = self._calls.register(request_id, method)
        self._outbox.put(data)
        return pending

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its result.

        :param method: the method name.
        :param params: the params; ``None`` leaves the member out.
        :param timeout: seconds to wait; ``None`` waits for ever.
        :returns: the result, ``{}`` for a null result.
        :raises RpcError: the other side answered with an error.
        :raises RpcTimeout: no answer in time (the request is forgotten).
        :raises PeerClosedError: the connection ended before the answer.
        """
        return await self.start_request(method, params).wait(timeout)

    def after_response(self, callback: AfterResponse) -> None:
        """Register an after-response hook for the calling task's request (module ``after_response``).

        :param callback: a synchronous callable taking no arguments.
        :raises RuntimeError: called outside an inbound request handler.
        """
        after_response(callback)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every frame enqueued so far has been written.

        :param timeout: seconds to wait; ``None`` waits for ever.
        :returns: ``True`` if written, ``False`` on timeout or lost output.
        """
        return await self._outbox.flush(timeout)

    async def drain(self, max_pending_bytes: int = MIB) -> bool:
        """Wait until at most ``max_pending_bytes`` are queued (for producers that can pause).

        :param max_pending_bytes: the queue size to get below.
        :returns: ``True`` once below, ``False`` if the output is gone.
        """
        return await self._outbox.drain(max_pending_bytes)

    # ------------------------------------------------------------------ state changes

    def _output_lost(self, exc: BaseException) -> None:
        self._log.info("%s: output closed (%s); stopping", self.options.name, exc)
        if self._reason is None:
            self._reason = "output_lost"
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        self._end_input("output_lost")

    def _end_input(self, reason: CloseReason) -> None:
        if self._input_done:
            return
        self._input_done = True
        if self._reason is None:
            self._reason = reason
        self._calls.fail_all(f"the connection ended ({self._reason}) before the response")
        if self._own_reader is not None:
            self._own_reader.close()
        self.closed.set()

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        read = self._reader.read
        size = self.options.read_chunk_bytes
        feed = self._splitter.feed
        try:
            while True:
                try:
                    chunk = await read(size)
                except (OSError, ValueError) as exc:  # EIO on a vanished terminal, reset sockets
                    self._log.debug("%s: input failed: %s", self.options.name, exc)
                    break
                if not chunk:
                    break
                for line in feed(chunk if type(chunk) is bytes else bytes(chunk)):
                    self._handle_line(line)
            for line in self._splitter.finish():
                self._handle_line(line)
        finally:
            self._end_input("eof")

    def _handle_line(self, line: bytes | None) -> None:
        try:
            if line is None:
                limit = self.options.max_line_bytes
                self._log.warning("%s: discarded a line over %d bytes", self.options.name, limit)
                self._inbound.send_error(None, RpcError(INVALID_REQUEST, self.options.too_large_message))
                return
            try:
                message = decode_line(line)
            except (ValueError, RecursionError):
                self._inbound.send_error(None, self.options.error(PARSE_ERROR))
                return
            if type(message) is not dict:
                self._inbound.send_error(None, self.options.error(INVALID_REQUEST))
            elif "method" not in message and ("result" in message or "error" in message):
                self._calls.resolve(message)
            else:
                self._inbound.handle(message)
        except Exception:  # a bug here must not stop reading
            self._log.exception("%s: failed to handle an inbound frame", self.options.name)

    def _run_hook(self, ctx: RequestContext, hook: AfterResponse) -> None:
        self._inbound.run_hook(ctx, hook)
