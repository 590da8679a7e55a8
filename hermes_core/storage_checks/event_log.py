"""Conformance checks of the event log's backend contract
(:class:`~hermes_core.event_log.store.EventLogStore`)."""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_core.errors import StorageError
from hermes_core.event_log.store import ChunkWrite, EventChunk, EventLogStore
from hermes_core.storage_checks import StorageTarget, World, check, ensure


async def _log(world: World) -> EventLogStore:
    storage: Any = await world.storage()
    for name in (
        "write_event_chunks",
        "read_event_chunks",
        "last_event_chunk",
        "event_log_index",
        "trim_event_log",
    ):
        ensure(callable(getattr(storage, name, None)), f"the backend has no event log: no {name}")
    store: EventLogStore = storage
    return store


def _chunk(first: int, last: int, tag: str = "") -> EventChunk:
    return EventChunk(first, last, f"{first}-{last}{tag}".encode() + bytes(range(256)))


async def _write(
    store: EventLogStore, sid: str, chunk: EventChunk, after: int, replace: int | None = None
) -> bool:
    [applied] = await store.write_event_chunks([ChunkWrite(sid, chunk, after, replace)])
    return applied


def _spans(chunks: list[EventChunk]) -> list[tuple[int, int]]:
    return [(c.first_seq, c.last_seq) for c in chunks]


@check("event_log")
async def empty_log(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _log(world)
        ensure(await store.last_event_chunk("nobody") is None, "an empty log has no last chunk")
        ensure(await store.read_event_chunks("nobody", after=0, limit=10) == [], "an empty log reads nothing")
        ensure(await store.event_log_index("nobody") == [], "an empty log has an empty index")
        ensure(await store.trim_event_log("nobody", before=10) == 0, "trimming an empty log deletes nothing")


@check("event_log")
async def append_and_read_back(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _log(world)
        chunks = [_chunk(1, 3), _chunk(4, 4), _chunk(5, 9)]
        after = 0
        for chunk in chunks:
            ensure(await _write(store, "s", chunk, after), f"a write after the log's end {after} applies")
            after = chunk.last_seq
        last = await store.last_event_chunk("s")
        ensure(last == chunks[-1], "the last chunk comes back byte for byte")
        every = await store.read_event_chunks("s", after=0, limit=10)
        ensure(every == chunks, "chunks read back in order, byte for byte")
        ensure(
            _spans(await store.read_event_chunks("s", after=3, limit=10)) == [(4, 4), (5, 9)], "after skips"
        )
        ensure(
            _spans(await store.read_event_chunks("s", after=6, limit=10)) == [(5, 9)],
            "a chunk holding after+1",
        )
        ensure(
            _spans(await store.read_event_chunks("s", after=0, limit=2)) == [(1, 3), (4, 4)],
            "limit counts chunks",
        )
        ensure(await store.read_event_chunks("s", after=9, limit=10) == [], "nothing after the end")
        index = await store.event_log_index("s")
        ensure(
            [(i.first_seq, i.last_seq, i.size) for i in index]
            == [(c.first_seq, c.last_seq, len(c.data)) for c in chunks],
            f"the index lists every chunk with its size: {index}",
        )
        ensure(await store.read_event_chunks("other", after=0, limit=10) == [], "logs are per session")


@check("event_log")
async def the_end_is_compared_and_set(target: StorageTarget) -> None:
    async with World(target) as world:
        first, second = await _log(world), await _log(world)
        ensure(await _write(first, "cas", _chunk(1, 2), 0), "the first write applies")
        ensure(
            not await _write(second, "cas", _chunk(1, 5, "x"), 0), "a write expecting an older end is refused"
        )
        ensure(not await _write(second, "cas", _chunk(8, 9), 7), "a write expecting another end is refused")
        ensure(
            _spans(await first.read_event_chunks("cas", after=0, limit=10)) == [(1, 2)],
            "a refused write changes nothing",
        )
        ensure(await _write(second, "cas", _chunk(10, 12), 2), "numbers may jump past the end")
        ensure(
            _spans(await first.read_event_chunks("cas", after=0, limit=10)) == [(1, 2), (10, 12)],
            "both instances see it",
        )


@check("event_log")
async def replace_rewrites_the_newest_chunks(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _log(world)
        for chunk, after in ((_chunk(1, 4), 0), (_chunk(5, 5), 4), (_chunk(6, 8), 5)):
            await _write(store, "rep", chunk, after)
        merged = _chunk(5, 10, "merged")
        ensure(await _write(store, "rep", merged, 8, replace=5), "a replacing write applies")
        ensure(await store.read_event_chunks("rep", after=0, limit=10) == [_chunk(1, 4), merged], "replaced")
        resealed = _chunk(5, 10, "sealed")
        ensure(
            await _write(store, "rep", resealed, 10, replace=5), "the newest chunk may be rewritten in place"
        )
        ensure((await store.last_event_chunk("rep")) == resealed, "rewritten")


@check("event_log")
async def a_bad_write_writes_nothing(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _log(world)
        await _write(store, "bad", _chunk(1, 3), 0)
        # Chunk 1-3 starts below replace_from, so it stays, and 2-5 would overlap it.
        writes = [ChunkWrite("good", _chunk(1, 1), 0), ChunkWrite("bad", _chunk(2, 5), 3, replace_from=2)]
        try:
            await store.write_event_chunks(writes)
        except StorageError:
            pass
        else:
            raise AssertionError("a chunk that does not follow the log's end must raise StorageError")
        ensure(await store.last_event_chunk("good") is None, "no write of a refused call lands")
        ensure(
            [c.last_seq for c in await store.read_event_chunks("bad", after=0, limit=9)] == [3],
            "bad is unchanged",
        )
        malformed = (
            ChunkWrite("bad", EventChunk(5, 4, b"x"), 3),
            ChunkWrite("bad", _chunk(2, 4), 3),
            ChunkWrite("bad", _chunk(4, 9), 3, replace_from=5),
        )
        for bad in malformed:
            try:
                await store.write_event_chunks([bad])
            except StorageError:
                continue
            raise AssertionError(
                f"a malformed write must raise StorageError: {bad.chunk.first_seq}..{bad.chunk.last_seq}"
            )


@check("event_log")
async def many_sessions_in_one_call(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _log(world)
        await _write(store, "b", _chunk(1, 1), 0)
        results = await store.write_event_chunks(
            [
                ChunkWrite("a", _chunk(1, 2), 0),
                ChunkWrite("b", _chunk(2, 2), 0),
                ChunkWrite("c", _chunk(1, 9), 0),
            ]
        )
        ensure(results == [True, False, True], f"each write is applied or refused on its own: {results}")
        ensure(
            _spans(await store.read_event_chunks("b", after=0, limit=9)) == [(1, 1)],
            "the refused log is unchanged",
        )


@check("event_log")
async def trim_keeps_the_newest(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _log(world)
        after = 0
        for n in range(5):
            chunk = _chunk(n * 10 + 1, n * 10 + 10)
            await _write(store, "t", chunk, after)
            after = chunk.last_seq
        ensure(await store.trim_event_log("t", before=21) == 2, "chunks ending below before are deleted")
        ensure(_spans(await store.read_event_chunks("t", after=0, limit=9))[0] == (21, 30), "the rest stay")
        ensure(await store.trim_event_log("t", before=10**9) == 2, "everything but the newest chunk goes")
        ensure(
            _spans(await store.read_event_chunks("t", after=0, limit=9)) == [(41, 50)],
            "the newest chunk stays",
        )
        ensure(await _write(store, "t", _chunk(51, 51), 50), "the log goes on after trimming")


@check("event_log")
async def large_chunks_and_concurrent_writers(target: StorageTarget) -> None:
    async with World(target) as world:
        first, second = await _log(world), await _log(world)
        big = EventChunk(1, 1000, bytes(range(256)) * 4096)
        ensure(await _write(first, "big", big, 0), "a 1 MiB chunk is stored")
        ensure(await second.last_event_chunk("big") == big, "and read back whole")
        results = await asyncio.gather(
            *(_write(s, "race", _chunk(1, 1, s_name), 0) for s, s_name in ((first, "a"), (second, "b")))
        )
        ensure(
            sorted(results) == [False, True], f"of two writers expecting the same end, one wins: {results}"
        )
