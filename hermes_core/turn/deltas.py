"""Merge the deltas of a model call that have already arrived into one event
(docs/reference/core.md#delta-coalescing).

A provider's stream yields one chunk per upstream event. When the event loop keeps up, every
chunk comes from a read that had to wait for the network, and each becomes its own
``TextDelta`` at once. When the loop is behind, one read brings many upstream events, and the
stream yields them back to back without waiting: those are merged, so that the observers, the
event log and every transport handle one event instead of one per token.

"Already arrived" is decided without a timer: :func:`next_chunk` awaits the stream's next chunk
and calls ``flush`` just before that await would suspend (the stream has to wait for more
bytes). Pending text therefore never waits for anything but the decoding of what is already in
hand, and the pending deltas are always emitted before the turn can be cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes_core.events import ReasoningDelta, TextDelta
from hermes_core.turn.first_wait import before_first_wait

if TYPE_CHECKING:
    from hermes_core.session import Session

#: Merged deltas at most per event; the turn then yields to the loop (a stream that never waits).
MAX_MERGED = 64


class PendingDeltas:
    """Text or reasoning deltas of one segment that are held until the stream has to wait.

    :param session: where the merged event is emitted.
    :param turn_id: the turn the deltas belong to.
    """

    __slots__ = ("_parts", "_reasoning", "_segment", "count", "session", "turn_id")

    def __init__(self, session: Session, turn_id: str) -> None:
        self.session = session
        self.turn_id = turn_id
        self._parts: list[str] = []
        self._reasoning = False
        self._segment = ""
        self.count = 0

    def add(self, segment: str, text: str, reasoning: bool) -> None:
        """Hold one delta; a delta of the other kind (or segment) flushes the pending ones first."""
        if self._parts and (reasoning is not self._reasoning or segment != self._segment):
            self.flush()
        self._parts.append(text)
        self._reasoning = reasoning
        self._segment = segment
        self.count += 1

    def flush(self) -> None:
        """Emit the pending deltas as one event (nothing when none is pending)."""
        parts = self._parts
        if not parts:
            return
        text = parts[0] if len(parts) == 1 else "".join(parts)
        self._parts = []
        self.count = 0
        session = self.session
        kind = ReasoningDelta if self._reasoning else TextDelta
        session.emit(kind(session_id=session.id, turn_id=self.turn_id, segment_id=self._segment, text=text))


def next_chunk(stream: AsyncIterator[Any], flush: Callable[[], None]) -> Awaitable[Any]:
    """Await ``anext(stream)``, calling ``flush`` once, just before it would first suspend.

    :raises StopAsyncIteration: at the end of the stream, as ``anext`` does.
    """
    return before_first_wait(stream.__anext__(), flush)
