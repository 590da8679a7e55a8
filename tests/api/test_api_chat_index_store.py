"""The chat index in the kernel's records, on the memory and SQLite backends
(docs/reference/api-server.md#persistence); PostgreSQL runs the same checks in tests/postgres."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from hermes_api_server.chat_index import CANDIDATES, Mirror
from hermes_api_server.kernel_chat_index import KernelChatIndex
from tests.api.chat_index_checks import index_rows_behave, keys_expire
from tests.api.records_world import api_records

BACKENDS = ("memory", "sqlite")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_chat_index_records_looks_up_and_is_bounded(backend: str, tmp_path: Path) -> None:
    async with api_records(backend, tmp_path / "hermes.sqlite3") as (store,):
        await index_rows_behave(store, store)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_chat_index_keys_expire(backend: str, tmp_path: Path) -> None:
    async with api_records(backend, tmp_path / "hermes.sqlite3", chat_ttl_s=1.0) as (store,):
        await keys_expire(store)


async def test_the_chat_index_outlives_the_process(tmp_path: Path) -> None:
    async with api_records("sqlite", tmp_path / "hermes.sqlite3") as (store,):
        await store.record_chat("p1", "s1", ["k1"], [])
    async with api_records("sqlite", tmp_path / "hermes.sqlite3") as (again,):
        assert await again.chat_sessions("p1", "k1", 60, 8) == [("s1", True)]
        assert not (tmp_path / "api_server.sqlite3").exists()


async def test_the_in_memory_mirror_answers_what_the_records_hold(tmp_path: Path) -> None:
    mirror = Mirror(size=5)  # smaller than the keys used, so that eviction happens too
    pick = random.Random(7)
    keys, sessions = [f"k{i}" for i in range(8)], [f"s{i}" for i in range(4)]
    async with api_records("sqlite", tmp_path / "hermes.sqlite3") as (store,):
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


class _Calls:
    """Wraps a record space and counts the storage calls made through it; ``one_step=False``
    makes it a space whose backend cannot insert in one step."""

    def __init__(self, space: Any, calls: list[str], *, one_step: bool = True) -> None:
        self._space = space
        self._calls = calls
        self._one_step = one_step

    @property
    def inserts(self) -> bool:
        return self._one_step and bool(self._space.inserts)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._space, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(name)
            return await method(*args, **kwargs)

        return call


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("one_step", [True, False], ids=["insert", "claim-release"])
async def test_a_new_chats_first_turn_end_costs_two_storage_calls(
    backend: str, one_step: bool, tmp_path: Path
) -> None:
    """A new stateless chat's first turn end inserts its new key (one call; a claim and its
    release on a backend without ``insert_record``) and writes the session's heads (it had none
    to read); a later turn reads its heads, tries to insert a key that exists (a read, nothing
    written) and writes it by version."""
    new = ["insert"] if one_step else ["claim", "release"]
    there = ["insert"] if one_step else ["claim"]
    async with api_records(backend, tmp_path / "hermes.sqlite3") as (store,):
        calls: list[str] = []
        chats = store._chats
        keys = _Calls(chats._keys, calls, one_step=one_step)
        index = KernelChatIndex(keys, _Calls(chats._heads, calls), chats.ttl_s)  # type: ignore[arg-type]
        assert await index.record("p1", "s1", ["k1"], [], CANDIDATES, first=True) == {"k1": [("s1", True)]}
        assert calls == [*new, "put"]
        calls.clear()
        named = await index.record("p2", "s2", ["k1"], [], CANDIDATES, first=True)
        assert named == {"k1": [("s2", True)]}  # another principal's key of the same text: its own
        calls.clear()
        named = await index.record("p1", "s3", ["k1"], [], CANDIDATES, first=True)
        assert named == {"k1": [("s3", True), ("s1", True)]}
        assert calls == [*there, "put", "put"]
        calls.clear()
        named = await index.record("p1", "s1", ["k2"], [], CANDIDATES)
        assert named == {"k2": [("s1", True)]}
        assert calls == ["get", *new, "get", "put", "put"]  # k1 loses s1's head
        assert await store.chat_sessions("p1", "k1", 60, 8) == [("s3", True), ("s1", False)]
        digest = hashlib.sha256(json.dumps(["p1", "k2"]).encode()).hexdigest()
        stored = await chats._keys.get(digest)  # either way, the record a released claim leaves
        assert stored is not None and (stored.owner, stored.epoch, stored.version) == (None, 1, 2)
