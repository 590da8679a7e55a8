"""Deltas of a streamed chat turn written from the turn's own step
(docs/reference/api-server.md#sse-streams).

The stream's pump is a task that waits for the turn's events (``Turn.next_events``). While it
waits with nothing queued, every token would wake it once: the turn's step queues the delta, the
pump's step writes it. :class:`DeltaSink` is the turn's sink (``Turn.set_sink``) for that time:
it writes a text or reasoning delta's chunk at once, from inside ``Session.emit`` (so after the
event log numbered the event), and the pump sleeps on. Anything else, or a delta the writer cannot
take without waiting, is queued for the pump as before, and keeps every later event behind it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from hermes_core import ReasoningDelta, TextDelta

if TYPE_CHECKING:
    from hermes_api_server.chat_stream import ChatChunks
    from hermes_api_server.sse import SseWriter


class DeltaSink:
    """Writes the deltas that reach an idle chat stream.

    :param chunks: the stream's chunk encoder (it notes the content written).
    :param writer: the stream's writer (``write_now``).
    :param keep_reasoning: write reasoning deltas (else they are dropped, as the pump drops them).
    """

    __slots__ = ("_chunks", "_keep_reasoning", "_loop", "_writer", "last_write", "off", "parked")

    def __init__(self, chunks: ChatChunks, writer: SseWriter, keep_reasoning: bool) -> None:
        self._chunks = chunks
        self._writer = writer
        self._keep_reasoning = keep_reasoning
        self._loop = asyncio.get_running_loop()
        #: Set by the pump while it waits with its stream open and nothing of its own pending.
        self.parked = False
        #: Not installed (the writer has frame faults, or the turn offers no sink).
        self.off = False
        #: Loop time of the stream's last write (the keep-alive counts from it).
        self.last_write = self._loop.time()

    def __call__(self, event: object) -> bool:
        """Write ``event`` when it is a delta and the pump is parked; say whether it did."""
        if not self.parked:
            return False
        kind = type(event)
        if kind is TextDelta:
            text: str = event.text  # type: ignore[attr-defined]
            if not self._writer.write_now(self._chunks.delta_frame(text, None)):
                return False
            self._chunks.sent(text)
        elif kind is ReasoningDelta:
            if self._keep_reasoning:
                reasoning: str = event.text  # type: ignore[attr-defined]
                if not self._writer.write_now(self._chunks.delta_frame(None, reasoning)):
                    return False
        else:
            return False
        self.last_write = self._loop.time()
        return True
