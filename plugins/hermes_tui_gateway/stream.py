"""One live session's outgoing event stream: encode, coalesce, number, keep, deliver
(docs/reference/tui-gateway.md#sequence-numbers-and-replay, #events).

A :class:`SessionStream` reads the session's bus (``session.subscribe()``), turns each core
event into TUI events, merges runs of deltas (33 ms to 1 s, never dropped), assigns ``seq`` once
the frame is final, keeps the frame in a ring for ``session.events.since`` and writes it to the
connection the session is bound to, if any.

Stored before shown: with the kernel's event log on, a numbered frame goes out only once the log
has stored the event it is numbered after (a number above the stored ones may name another event
after a crash). Frames waiting for storage queue in order (notices behind them too); one task
asks the log for the newest queued number (``kernel.events.durable``, which makes the log's
writer write at once) and, when that batch is stored, sends every frame it covers together: a
group commit, with no fixed delay and nothing blocking the loop. When the log stops before storing
them (its close timed out, storage refused its writes for too long: ``EventLogStopped``), they go
out without their ``seq``, as notices: the text is shown, no cursor is claimed for a number that
may name another event once the session is opened again.

Pacing: a terminal client redraws the whole live tail of a reply (the Ink TUI keeps the last
16,000 characters) for every ``message.delta`` it gets, so a redraw costs more the longer the
reply is. The merge window therefore grows with the text streamed since the reply (or its last
tool call) began: ``tui.stream_interval_s`` (33 ms) at first, rising in proportion to
``tui.stream_interval_long_s`` (1 s) once ``LONG_REPLY_CHARS`` have streamed. Keystrokes then
still echo while a very long reply streams (docs/reference/tui-gateway.md#settings).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hermes_core import DeltaCoalescer, EventLogStopped, rpc
from hermes_tui_gateway import encode
from hermes_tui_gateway.projection import LONG_REPLY_CHARS, VERBOSE, EventProjector
from hermes_tui_gateway.wire import InfoExtra, SessionInfoObj, UsageObj

if TYPE_CHECKING:
    from hermes_core import AnyEvent, Session

log = logging.getLogger("hermes.tui")
COALESCE_S = 0.033
LONG_COALESCE_S = 1.0
MAX_BUFFER_CHARS = 256 * 1024
YIELD_EVERY = 128
#: How long closing a stream waits for the log to store the frames still queued.
SETTLE_S = 5.0


class Sink(Protocol):
    """Where a bound session's frames go (a connection)."""

    def send_bytes(self, data: bytes) -> None:
        """Write one encoded frame."""
        ...


class SessionStream(EventProjector):
    """The event pipeline of one live session.

    :param session: the live session.
    :param info_extra: returns the gateway-held ``SessionInfo`` fields.
    :param ring_events: ring size in events.
    :param ring_bytes: ring size in bytes.
    :param seq_start: the last ``seq`` used for this id earlier in this process (log off).
    :param subscribe: read the session's bus; False builds a projector for a replay.
    """

    def __init__(
        self,
        session: Session,
        info_extra: Callable[[], InfoExtra],
        ring_events: int,
        ring_bytes: int,
        seq_start: int = 0,
        interval_s: float = COALESCE_S,
        long_interval_s: float = LONG_COALESCE_S,
        *,
        subscribe: bool = True,
    ) -> None:
        self.session = session
        self.session_id = session.id
        self.info_extra = info_extra
        self.seq = seq_start
        self.ring: collections.deque[tuple[int, dict[str, Any], int]] = collections.deque()
        self._ring_bytes = 0
        self._ring_max_events = ring_events
        self._ring_max_bytes = ring_bytes
        self.sink: Sink | None = None
        self._held: list[bytes] | None = None
        self._holds = 0
        self._deltas = DeltaCoalescer(self._emit_deltas, split_kinds=True, max_chars=MAX_BUFFER_CHARS)
        self._timer: asyncio.TimerHandle | None = None
        self._interval_s = interval_s
        self._long_interval_s = max(interval_s, long_interval_s)
        # Characters of text and reasoning streamed since the reply (or its last tool call) began.
        self._streamed = 0
        self._tool_args: dict[str, Any] = {}
        self._tool_names: dict[str, str] = {}
        self._last_usage = 0.0
        self.verbose = "all"
        self.last_usage_obj: UsageObj | None = None
        self._last_info: SessionInfoObj | None = None
        # Background tasks started through this gateway whose background.complete is still due.
        self.open_tasks: set[str] = set()
        # Children seen during the running turn; when it completes, ``on_tree`` gets their ids.
        self.turn_subagents: dict[str, None] = {}
        self.on_tree: Callable[[list[str]], None] | None = None
        # With the kernel's event log on, a frame's seq is the log number of the newest core
        # event it carries (docs/reference/tui-gateway.md#sequence-numbers-and-replay).
        self.logged = session.kernel.events.enabled
        self._source_seq: int | None = None
        self._delta_seq = 0
        self._delta_kind: type | None = None
        #: When set, frames are collected here instead of kept and delivered (a replay).
        self.collect: list[dict[str, Any]] | None = None
        #: The newest ``seq`` let out (sent, held, or dropped for want of a connection): what a
        #: client may have; frames above it wait in ``_outbox`` for the log to store them.
        self.shown_seq = seq_start
        # (seq, params, frame): seq 0 and params None for a notice queued behind numbered frames.
        self._outbox: collections.deque[tuple[int, dict[str, Any] | None, bytes]] = collections.deque()
        self._outbox_last = 0
        self._drainer: asyncio.Task[None] | None = None
        if not subscribe:
            return
        self._sub = session.subscribe()
        if self.logged:
            # Read in the same step as subscribing: events numbered up to here are in the log
            # only (a replay reads them), later ones arrive on the bus.
            self.seq = session.kernel.events.head(session.id) or 0
            self.shown_seq = self.seq
        self._task = asyncio.get_running_loop().create_task(self._pump(), name=f"tui-stream-{session.id}")

    # -- delivery ----------------------------------------------------------------------------
    def hold(self) -> Callable[[], None]:
        """Hold live delivery (frames still get seq and enter the ring) until the returned call."""
        self._holds += 1
        if self._held is None:
            self._held = []
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self._holds -= 1
            if self._holds == 0:
                held, self._held = self._held or [], None
                if self.sink is not None:
                    for data in held:
                        self.sink.send_bytes(data)

        return release

    def bind(self, sink: Sink | None) -> None:
        """Route later frames to ``sink`` (``None`` detaches)."""
        self.sink = sink

    def since(self, last_seen: int) -> tuple[list[dict[str, Any]], bool]:
        """Return the retained events after ``last_seen`` and whether some are missing."""
        events = [params for seq, params, _size in self.ring if seq > last_seen]
        oldest = self.ring[0][0] if self.ring else self.seq + 1
        truncated = last_seen > self.seq or (last_seen + 1 < oldest and last_seen < self.seq)
        return events, truncated

    def emit(self, type_: str, payload: Mapping[str, Any] | None = None) -> None:
        """Number, keep and deliver one session event (flushing buffered deltas first).

        Called while the pump projects a core event, the frame takes that event's log number;
        called by the gateway itself with the log on, the frame is a notice without ``seq``
        (delivered live, never replayed).
        """
        if type_ not in ("message.delta", "reasoning.delta"):
            self._flush()
        self._emit(type_, payload, self._source_seq)

    def _emit(self, type_: str, payload: Mapping[str, Any] | None, source: int | None) -> None:
        params: dict[str, Any] = {"type": type_, "session_id": self.session_id}
        previous = self.seq
        numbered = True
        if not self.logged:
            self.seq += 1
        elif source and source > self.seq:
            self.seq = source
        else:
            numbered = False
        if numbered:
            params["seq"] = self.seq
        if payload is not None:
            params["payload"] = payload
        if self.collect is not None:
            if numbered:
                self.collect.append(params)
            return
        try:
            data = rpc.encode_frame({"jsonrpc": "2.0", "method": "event", "params": params})
        except (TypeError, ValueError):
            log.exception("tui: cannot encode a %s event", type_)
            self.seq = previous
            return
        if not numbered:
            if self._outbox:
                self._outbox.append((0, None, data))  # behind the numbered frames still waiting
            else:
                self._deliver(data)
            return
        seq = self.seq
        size = len(data)
        ring = self.ring
        ring.append((seq, params, size))
        self._ring_bytes += size
        while len(ring) > self._ring_max_events or (
            self._ring_bytes > self._ring_max_bytes and len(ring) > 1
        ):
            self._ring_bytes -= ring.popleft()[2]
        if self._outbox or (self.logged and self._unstored(seq)):
            self._outbox.append((seq, params, data))
            self._outbox_last = seq
            if self._drainer is None:
                self._drainer = asyncio.get_running_loop().create_task(
                    self._drain(), name=f"tui-outbox-{self.session_id}"
                )
            return
        self.shown_seq = seq
        self._deliver(data)

    def _deliver(self, data: bytes) -> None:
        if self._held is not None:
            self._held.append(data)
        elif self.sink is not None:
            self.sink.send_bytes(data)

    # -- stored before shown -----------------------------------------------------------------
    def _unstored(self, seq: int) -> bool:
        """Whether the log has yet to store event ``seq`` (False: nothing to wait for)."""
        stored = self.session.kernel.events.stored(self.session_id)
        return stored is not None and seq > stored

    async def _drain(self) -> None:
        """Send the queued frames, each batch once the log has stored the newest of them."""
        events = self.session.kernel.events
        outbox = self._outbox
        try:
            while outbox:
                try:
                    await events.durable(self.session_id, self._outbox_last)
                except EventLogStopped:
                    self._release_stored()
                    self._release_unnumbered()
                    return
                self._release_stored()
        finally:
            self._drainer = None

    def _release_stored(self) -> None:
        """Send the queued frames the log has stored (and the notices right behind them)."""
        outbox = self._outbox
        stored = self.session.kernel.events.stored(self.session_id)
        while outbox:
            seq, _params, data = outbox[0]
            if seq and stored is not None and seq > stored:
                break
            outbox.popleft()
            if seq:
                self.shown_seq = seq
            self._deliver(data)

    def _release_unnumbered(self) -> None:
        """Send every queued frame, those the log has not stored without their ``seq`` (notices:
        never replayed, no cursor claimed)."""
        outbox, self._outbox = self._outbox, collections.deque()
        if outbox:
            log.warning(
                "tui: %d frames of %s sent without their number: the log did not store them",
                len(outbox),
                self.session_id,
            )
        for _seq, params, data in outbox:
            if params is not None:
                bare = {key: value for key, value in params.items() if key != "seq"}
                data = rpc.encode_frame({"jsonrpc": "2.0", "method": "event", "params": bare})
            self._deliver(data)

    async def settle(self, timeout: float) -> None:
        """Wait until no frame waits for the log (a log that stops tells its waiters at once);
        after ``timeout``, send what the log stored numbered and the rest without numbers."""
        drainer = self._drainer
        if drainer is not None:
            await asyncio.wait([drainer], timeout=timeout)
            if not drainer.done():
                drainer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await drainer
        if self._outbox:
            self._release_stored()
            self._release_unnumbered()

    # -- coalescing --------------------------------------------------------------------------
    def _flush(self) -> None:
        self._deltas.flush()
        self._stop_timer()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def merge_window(self) -> float:
        """Return how long the next run of deltas may wait (see the module's "Pacing")."""
        share = min(1.0, self._streamed / LONG_REPLY_CHARS)
        return self._interval_s + (self._long_interval_s - self._interval_s) * share

    def _emit_deltas(self, text: str | None, reasoning: str | None) -> None:
        self._stop_timer()
        seq = self._delta_seq or None
        if reasoning is not None:
            self._emit("reasoning.delta", {"text": reasoning}, seq)
        if text is not None:
            self._emit("message.delta", {"text": text}, seq)

    # -- the pump ----------------------------------------------------------------------------
    async def _pump(self) -> None:
        handled = 0
        try:
            async for ev in self._sub:
                try:
                    self._handle(ev)
                except Exception:
                    log.exception("tui: failed to encode %s", type(ev).__name__)
                handled += 1
                if handled >= YIELD_EVERY:
                    # A queued backlog never suspends the iterator; let the reader answer between batches.
                    handled = 0
                    await asyncio.sleep(0)
        finally:
            self._flush()

    async def aclose(self) -> None:
        """Stop reading the bus (after the session closed its subscribers)."""
        if not self._task.done():
            # The session's close ends the subscription; let the pump encode what is queued.
            await asyncio.wait([self._task], timeout=1.0)
        self._sub.close()
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._flush()
        await self.settle(SETTLE_S)

    def end_open_tasks(self) -> None:
        """Emit ``background.complete {status:"interrupted"}`` for tasks whose own event was lost.

        The core's close cancels background tasks and ends the bus in the same step, so a task's
        completion can arrive after the stream stopped reading; the host is still owed one.
        """
        for task_id in sorted(self.open_tasks):
            self.emit("background.complete", {"task_id": task_id, "text": "", "status": "interrupted"})
        self.open_tasks.clear()

    def emit_info(self, force: bool = False) -> None:
        """Emit ``session.info`` unless it would repeat the last one word for word."""
        payload = self.info_payload()
        if force or payload != self._last_info:
            self._last_info = payload
            self.emit("session.info", payload)

    def info_payload(self) -> SessionInfoObj:
        """Return the current ``SessionInfo`` object."""
        return encode.info_obj(self.session.info(), self.info_extra())

    def _handle(self, ev: AnyEvent) -> None:
        self._source_seq = ev.seq or None
        try:
            self._on_event(ev)
        finally:
            self._source_seq = None

    def project(self, events: list[AnyEvent]) -> list[dict[str, Any]]:
        """Return the frames ``events`` project to (a replay: nothing is kept or delivered)."""
        out: list[dict[str, Any]] = []
        self.collect = out
        for ev in events:
            self._handle(ev)
        self._flush()
        return out


__all__ = ["COALESCE_S", "LONG_COALESCE_S", "LONG_REPLY_CHARS", "VERBOSE", "SessionStream", "Sink"]
