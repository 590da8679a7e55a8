"""A run's bounded event journal with multi-subscriber wake-ups (docs/reference/api-server.md#run-events).

Readers get the events the run's bus lets this process show (:attr:`Journal.shown`): on the
in-process bus every event at once; on a shared bus the events whose seqs the bus reserved for
this instance, so that no seq is ever shown here with another meaning than on the bus
(docs/reference/api-server.md#run-bus). Wherever the answer to a reader skips seqs — evicted
events, a journal rebuilt from a stored terminal event, seqs that never reached the bus — a
``stream.gap`` frame says which, before the next event.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Mapping
from typing import Any

from hermes_api_server.errors import dumps
from hermes_api_server.run_event_models import StreamGap

MAX_SUBSCRIBERS = 32


def gap_frame(run_id: str, first: int, last: int) -> str:
    """Return the id-less ``stream.gap`` frame for seqs ``first`` to ``last``."""
    payload = StreamGap(event="stream.gap", run_id=run_id, timestamp=time.time(), from_seq=first, to_seq=last)
    return "data: " + dumps(payload) + "\n\n"


def event_frame(seq: int, data: str) -> str:
    """Return the SSE frame of event ``seq`` whose JSON is ``data``."""
    return f"id: {seq}\ndata: {data}\n\n"


class Journal:
    """Numbered run events: the newest ``limit`` in memory, the terminal one always."""

    def __init__(self, run_id: str, limit: int, first_seq: int = 1) -> None:
        self.run_id = run_id
        self.limit = limit
        self.events: collections.deque[tuple[int, str]] = collections.deque(maxlen=limit)
        self.next_seq = first_seq
        #: The last seq readers may be sent (the run's bus moves it, see ``RunManager.shown``).
        self.shown = first_seq - 1
        #: While the run's bus cannot vouch that this process still owns the run (its liveness
        #: lease lapsed), readers get nothing past this seq (see ``RunManager.hold``).
        self.held: int | None = None
        self.terminal: tuple[int, str] | None = None
        self.terminal_payload: dict[str, Any] | None = None
        #: The JSON text of the last event added (what the run bus publishes, encoded once).
        self.last_data = ""
        self.subscribers = 0
        #: Grows at every change readers may care about (an event, more shown, the end).
        self.changes = 0
        self._wake = asyncio.Event()
        self.closed_at: float | None = None

    @property
    def last_seq(self) -> int:
        """The last seq a reader can be sent."""
        return min(self.next_seq - 1, self.visible)

    @property
    def visible(self) -> int:
        """The ceiling of what readers get: :attr:`shown`, lowered while :attr:`held`."""
        return self.shown if self.held is None else min(self.shown, self.held)

    @property
    def oldest_seq(self) -> int:
        return self.events[0][0] if self.events else self.next_seq

    def payload(self, event: str, fields: Mapping[str, Any], ts: float | None = None) -> dict[str, Any]:
        """Return the payload the next event would have (its seq is the next one)."""
        seq = self.next_seq
        stamp = time.time() if ts is None else ts
        return {"event": event, "run_id": self.run_id, "seq": seq, "timestamp": stamp, **fields}

    def append(
        self, event: str, fields: Mapping[str, Any], ts: float | None = None, *, terminal: bool = False
    ) -> dict[str, Any]:
        """Number and store an event; wake every subscriber; return the payload."""
        return self.add(self.payload(event, fields, ts), terminal=terminal)

    def add(self, payload: dict[str, Any], *, terminal: bool = False) -> dict[str, Any]:
        """Store an event made by :meth:`payload` (nothing was appended in between).

        A terminal event is shown at once: it is only added once the bus has committed it.
        """
        seq = int(payload["seq"])
        self.next_seq = seq + 1
        self.last_data = data = dumps(payload)
        frame = event_frame(seq, data)
        self.events.append((seq, frame))
        if terminal:
            # Committed on the bus after every event before it, by the run's owner: all shown.
            self.terminal = (seq, frame)
            self.terminal_payload = payload
            self.closed_at = time.monotonic()
            self.shown = max(self.shown, seq)
            self.held = None
        self._changed()
        return payload

    def show(self, upto: int) -> None:
        """Let readers have the events up to seq ``upto``."""
        if upto > self.shown:
            self.shown = upto
            self._changed()

    def hold(self, upto: int) -> None:
        """Give readers nothing past seq ``upto`` until :meth:`release` (the first hold stays)."""
        if self.held is None:
            self.held = upto

    def release(self) -> None:
        """End a :meth:`hold`: readers get everything shown again."""
        if self.held is not None:
            self.held = None
            self._changed()

    def set_terminal(self, payload: dict[str, Any]) -> None:
        """Install a terminal event read back from storage, or committed by another instance
        (original seq). Events never shown are dropped: they were not the run's events."""
        seq = int(payload["seq"])
        self.shown = self.visible
        self.held = None
        while self.events and self.events[-1][0] > self.shown:
            self.events.pop()
        frame = event_frame(seq, dumps(payload))
        self.terminal = (seq, frame)
        self.terminal_payload = payload
        self.next_seq = max(self.next_seq, seq + 1)
        self.shown = max(self.shown, seq)
        self.closed_at = time.monotonic()
        self._changed()

    def after(self, cursor: int) -> tuple[list[str], int]:
        """Return the frames a reader at ``cursor`` gets now, and its cursor after them.

        Frames are the shown events with ``seq > cursor`` and the terminal event; every skipped
        range of seqs (evicted, never shown, before a stored terminal event) comes first as a
        ``stream.gap`` frame.
        """
        out: list[str] = []
        shown = self.visible
        events = self.events
        start = 0
        if events and events[-1][0] - events[0][0] == len(events) - 1:
            # Consecutive seqs (the usual case): start at the cursor instead of scanning up to it.
            start = min(len(events), max(0, cursor + 1 - events[0][0]))
        for index in range(start, len(events)):
            seq, frame = events[index]
            if seq <= cursor:
                continue
            if seq > shown:
                break
            if seq > cursor + 1:
                out.append(gap_frame(self.run_id, cursor + 1, seq - 1))
            out.append(frame)
            cursor = seq
        if self.terminal is not None and self.terminal[0] > cursor:
            seq, frame = self.terminal
            if seq > cursor + 1:
                out.append(gap_frame(self.run_id, cursor + 1, seq - 1))
            out.append(frame)
            cursor = seq
        return out, cursor

    async def wait(self, timeout: float) -> None:
        """Wait until the next change or ``timeout`` seconds."""
        wake = self._wake
        try:
            await asyncio.wait_for(wake.wait(), timeout)
        except TimeoutError:
            pass

    def _changed(self) -> None:
        self.changes += 1
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()
