"""The chat index's rows in the API server's SQLite file (docs/reference/api-server.md#persistence)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from hermes_api_server.chat_index import CANDIDATES, Mirror
from hermes_api_server.responses_store import ResponseStore
from tests.api.chat_index_checks import index_rows_behave


async def test_the_chat_index_records_looks_up_and_is_bounded(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "api_server.sqlite3", 100)
    await store.open()
    try:
        await index_rows_behave(store, store)
    finally:
        await store.close()


async def test_a_file_from_before_the_chat_index_gains_its_table(tmp_path: Path) -> None:
    path = tmp_path / "api_server.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE conversations (principal TEXT, name TEXT, response_id TEXT)")
        db.execute("INSERT INTO conversations VALUES ('p1', 'team', 'resp_1')")
    store = ResponseStore(path, 100)
    await store.open()
    try:
        await store.record_chat("p1", "s1", ["k1"], [])
        assert await store.chat_sessions("p1", "k1", 60, 8) == [("s1", True)]
        assert await store.conversation("p1", "team") == "resp_1"
    finally:
        await store.close()


async def test_the_in_memory_mirror_answers_what_the_file_holds(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "api_server.sqlite3", 100)
    await store.open()
    mirror = Mirror(size=5)  # smaller than the keys used, so that eviction happens too
    pick = random.Random(7)
    keys, sessions = [f"k{i}" for i in range(8)], [f"s{i}" for i in range(4)]
    try:
        for _ in range(300):
            if pick.random() < 0.5:
                key = pick.choice(keys)
                found = await store.chat_sessions("p1", key, 3600, CANDIDATES)
                known = mirror.get("p1", key)
                assert known is None or known == found, (key, known, found)
                if known is None:
                    mirror.put("p1", key, found)
                continue
            session = pick.choice(sessions)
            heads = pick.sample(keys, pick.randint(1, 2))
            earlier = [k for k in pick.sample(keys, pick.randint(0, 2)) if k not in heads]
            now = await store.record_chat("p1", session, heads, earlier, CANDIDATES)
            mirror.recorded("p1", session, now, earlier)
    finally:
        await store.close()
