"""What the chat index must do on every storage backend (one instance or two sharing one)."""

from __future__ import annotations

from typing import Any

from tests.timing import eventually

HOUR = 3600.0


async def index_rows_behave(a: Any, b: Any) -> None:
    """Run the chat index's contract on two stores over one database (``a`` may be ``b``)."""
    await a.record_chat("p1", "s1", ["k1"], ["k0"])
    assert await b.chat_sessions("p1", "k1", HOUR, 8) == [("s1", True)]
    assert await b.chat_sessions("p1", "k0", HOUR, 8) == [("s1", False)]  # an earlier point
    assert await b.chat_sessions("p2", "k1", HOUR, 8) == []  # another key sees nothing
    assert await b.chat_sessions("p1", "k1", -1.0, 8) == []  # past its time
    # The conversation moves on: its latest point is k2 now.
    await b.record_chat("p1", "s1", ["k2"], [])
    assert await a.chat_sessions("p1", "k1", HOUR, 8) == [("s1", False)]
    assert await a.chat_sessions("p1", "k2", HOUR, 8) == [("s1", True)]
    # Another session reaches k1: most recently recorded first.
    await a.record_chat("p1", "s2", ["k1"], [])
    assert await b.chat_sessions("p1", "k1", HOUR, 8) == [("s2", True), ("s1", False)]
    assert await b.chat_sessions("p1", "k1", HOUR, 1) == [("s2", True)]
    # Earlier keys of a seeded session never make it the latest at that point.
    await b.record_chat("p1", "s3", ["k3"], ["k1"])
    assert await a.chat_sessions("p1", "k1", HOUR, 8) == [("s3", False), ("s2", True), ("s1", False)]
    # Asked for, a record tells what its head keys name afterwards.
    assert await a.record_chat("p1", "s4", ["k1"], [], 2) == {"k1": [("s4", True), ("s3", False)]}
    assert await a.record_chat("p1", "s3", ["k3"], [], 0) == {}
    # The cap keeps the most recently recorded keys (with every session each names).
    await a.sweep_chat_index(HOUR, 2)
    assert await b.chat_sessions("p1", "k3", HOUR, 8) == [("s3", True)]
    assert (await b.chat_sessions("p1", "k1", HOUR, 8))[:2] == [("s4", True), ("s3", False)]
    assert await b.chat_sessions("p1", "k2", HOUR, 8) == []
    assert await b.chat_sessions("p1", "k0", HOUR, 8) == []


async def keys_expire(a: Any) -> None:
    """A handle whose keys live a short time (``chat_ttl_s`` about a second) forgets them: reads skip
    them and a sweep deletes them."""
    await a.record_chat("p1", "s1", ["k1"], ["k0"])
    assert await a.chat_sessions("p1", "k1", HOUR, 8) == [("s1", True)]

    async def gone() -> bool:
        await a.sweep_chat_index(HOUR, 100)
        return await a.chat_sessions("p1", "k1", HOUR, 8) == [] == await a.chat_sessions("p1", "k0", HOUR, 8)

    await eventually(gone, what="the chat index keys expiring")
