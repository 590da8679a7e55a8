"""Per-session retention of the event log (docs/reference/core.md#retention).

A session's log keeps at most ``event_log.max_events`` events and ``event_log.max_bytes`` bytes
of stored chunks. Past either, the oldest whole chunks are dropped until both hold again; the
newest chunk and the open tail (chunks not compacted yet) always stay. A reader whose cursor is
older than what is left gets a ``retention`` gap first.
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes_core.event_log.store import ChunkInfo


def cutoff(
    index: Sequence[ChunkInfo], max_events: int, max_bytes: int, keep_from: int | None = None
) -> int | None:
    """Return the ``before`` to trim with (the first seq kept), or None when all may stay.

    :param index: the log's chunks, oldest first.
    :param keep_from: the first seq of the open tail (never dropped), if any.
    """
    events = sum(info.last_seq - info.first_seq + 1 for info in index)
    size = sum(info.size for info in index)
    drop = 0
    while drop < len(index) - 1 and (events > max_events or size > max_bytes):
        info = index[drop]
        if keep_from is not None and info.last_seq >= keep_from:
            break
        events -= info.last_seq - info.first_seq + 1
        size -= info.size
        drop += 1
    return index[drop].first_seq if drop else None
