"""The memory backend's event log (:class:`~hermes_core.event_log.store.EventLogStore` in lists).

Nothing is written anywhere: the chunks live as long as the storage object.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from hermes_core.event_log.store import ChunkInfo, ChunkWrite, EventChunk, check_writes


class MemoryEventLog:
    """Chunks per session, oldest first; part of :class:`~hermes_core.memory_storage.MemoryStorage`."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[EventChunk]] = {}

    async def write_event_chunks(self, writes: Sequence[ChunkWrite]) -> list[bool]:
        check_writes(writes)
        # Applied to copies first, so that a write breaking the rules changes nothing at all.
        changed: dict[str, list[EventChunk]] = {}
        results = []
        for write in writes:
            chunks = changed.get(write.session_id)
            if chunks is None:
                chunks = changed[write.session_id] = list(self._chunks.get(write.session_id, ()))
            end = chunks[-1].last_seq if chunks else 0
            if end != write.after:
                results.append(False)
                continue
            if write.replace_from is not None:
                while chunks and chunks[-1].first_seq >= write.replace_from:
                    chunks.pop()
            below = chunks[-1].last_seq if chunks else 0
            if write.chunk.first_seq <= below:
                from hermes_core.errors import StorageError

                raise StorageError(
                    f"event log write for session {write.session_id} refused: first_seq "
                    f"{write.chunk.first_seq} does not follow {below}"
                )
            chunk = write.chunk
            chunks.append(EventChunk(chunk.first_seq, chunk.last_seq, bytes(chunk.data)))
            results.append(True)
        self._chunks.update(changed)
        return results

    async def read_event_chunks(self, session_id: str, *, after: int, limit: int) -> list[EventChunk]:
        chunks = self._chunks.get(session_id, [])
        start = bisect.bisect_right([c.last_seq for c in chunks], after)
        return chunks[start : start + limit]

    async def last_event_chunk(self, session_id: str) -> EventChunk | None:
        chunks = self._chunks.get(session_id)
        return chunks[-1] if chunks else None

    async def event_log_index(self, session_id: str) -> list[ChunkInfo]:
        return [ChunkInfo(c.first_seq, c.last_seq, len(c.data)) for c in self._chunks.get(session_id, [])]

    async def trim_event_log(self, session_id: str, *, before: int) -> int:
        chunks = self._chunks.get(session_id, [])
        drop = 0
        while drop < len(chunks) - 1 and chunks[drop].last_seq < before:
            drop += 1
        del chunks[:drop]
        return drop
