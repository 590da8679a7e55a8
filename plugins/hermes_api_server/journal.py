"""A run's bounded event journal with multi-subscriber wake-ups (docs/reference/api-server.md#run-events)."""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

from hermes_api_server.errors import dumps

MAX_SUBSCRIBERS = 32


class Journal:
    """Numbered run events: the newest ``limit`` in memory, the terminal one always."""

    def __init__(self, run_id: str, limit: int, first_seq: int = 1) -> None:
        self.run_id = run_id
        self.limit = limit
        self.events: collections.deque[tuple[int, str]] = collections.deque(maxlen=limit)
        self.next_seq = first_seq
        self.terminal: tuple[int, str] | None = None
        self.terminal_payload: dict[str, Any] | None = None
        self.subscribers = 0
        self._wake = asyncio.Event()
        self.closed_at: float | None = None

    @property
    def last_seq(self) -> int:
        return self.next_seq - 1

    @property
    def oldest_seq(self) -> int:
        return self.events[0][0] if self.events else self.next_seq

    def append(self, event: str, fields: dict[str, Any], *, terminal: bool = False) -> dict[str, Any]:
        """Number and store an event; wake every subscriber; return the payload."""
        seq = self.next_seq
        self.next_seq += 1
        payload = {"event": event, "run_id": self.run_id, "seq": seq, "timestamp": time.time(), **fields}
        frame = f"id: {seq}\ndata: {dumps(payload)}\n\n"
        self.events.append((seq, frame))
        if terminal:
            self.terminal = (seq, frame)
            self.terminal_payload = payload
            self.closed_at = time.monotonic()
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()
        return payload

    def set_terminal(self, payload: dict[str, Any]) -> None:
        """Install a terminal event read back from storage (original seq)."""
        seq = int(payload["seq"])
        frame = f"id: {seq}\ndata: {dumps(payload)}\n\n"
        self.terminal = (seq, frame)
        self.terminal_payload = payload
        self.next_seq = max(self.next_seq, seq + 1)
        self.closed_at = time.monotonic()

    def after(self, cursor: int) -> tuple[list[str], tuple[int, int] | None]:
        """Return frames with ``seq > cursor`` and the evicted gap, if any."""
        gap = None
        oldest = self.oldest_seq
        if self.events and cursor + 1 < oldest:
            gap = (cursor + 1, oldest - 1)
        frames = [frame for seq, frame in self.events if seq > cursor]
        if (
            self.terminal is not None
            and self.terminal[0] > cursor
            and (not frames or not frames[-1] == self.terminal[1])
        ):
            if not any(seq == self.terminal[0] for seq, _ in self.events):
                frames.append(self.terminal[1])
        return frames, gap

    async def wait(self, timeout: float) -> None:
        """Wait until the next append or ``timeout`` seconds."""
        wake = self._wake
        try:
            await asyncio.wait_for(wake.wait(), timeout)
        except TimeoutError:
            pass
