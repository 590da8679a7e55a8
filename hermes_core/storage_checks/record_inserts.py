"""Conformance checks of the optional one-step insert of records
(:class:`~hermes_core.record_store.RecordInserts`): a backend that offers it leaves exactly what
a claim released at once leaves, and instances racing on one key see one winner."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hermes_core.record_store import Expect, RecordStore
from hermes_core.storage_checks import StorageTarget, World, check, ensure, until
from hermes_core.storage_checks.records import NS


async def _records(world: World) -> RecordStore:
    store: RecordStore = await world.storage()  # type: ignore[assignment]
    return store


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _inserts(store: RecordStore) -> Any:
    """The backend's ``insert_record`` (optional), or None."""
    insert = getattr(store, "insert_record", None)
    return insert if callable(insert) else None


@check("records")
async def inserts_leave_what_a_released_claim_leaves(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        insert = _inserts(store)
        if insert is None:
            return  # an optional part of the contract
        await store.claim_record(NS, "i-old", _json([1]), owner="api", scope="s", ttl_s=3600)
        old = await store.release_record(NS, "i-old", expect=Expect(owner="api"), ttl_s=3600)
        made = await insert(NS, "i-new", _json([1]), scope="s", ttl_s=3600)
        ensure(made.won, f"an absent key is inserted: {made}")
        new = await store.get_record(NS, "i-new")
        ensure(new is not None and new == made.record, f"the insert returns what it stored: {made} {new}")
        assert old is not None and new is not None
        same = ("data", "scope", "owner", "epoch", "version")
        ensure(
            all(getattr(new, f) == getattr(old, f) for f in same),
            f"an insert stores what a claim and its release store: {new} vs {old}",
        )
        ensure(new.created_at == new.updated_at, f"a fresh insert is created and updated at once: {new}")
        assert new.expires_at is not None
        ensure(abs(new.expires_at - new.updated_at - 3600) < 1, f"the ttl runs from the insert: {new}")
        again = await insert(NS, "i-new", _json([2]), ttl_s=3600)
        ensure(not again.won and again.record == new, f"a present record is handed back unchanged: {again}")
        held = await store.claim_record(NS, "i-held", _json("h"), owner="o")
        taken = await insert(NS, "i-held", _json("x"))
        ensure(not taken.won and taken.record == held.record, f"a held record stays its owner's: {taken}")
        put = await insert(NS, "i-forever", _json(0))
        ensure(put.won and put.record.expires_at is None, f"no ttl: never expires: {put}")
        after = await store.put_record(NS, "i-new", _json([3]), expect=Expect(version=new.version))
        ensure(after is not None and after.version == new.version + 1, "a compare-and-set follows it")


@check("records")
async def inserts_replace_an_expired_record(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        insert = _inserts(store)
        if insert is None:
            return
        await store.claim_record(NS, "i-brief", _json("old"), owner="o", ttl_s=0.2)

        async def gone() -> bool:
            return await store.get_record(NS, "i-brief") is None

        await until(gone, "an expired record to read as absent")
        made = await insert(NS, "i-brief", _json("new"), ttl_s=60)
        got = await store.get_record(NS, "i-brief")
        ensure(
            made.won
            and got is not None
            and (got.value, got.owner, got.epoch, got.version) == ("new", None, 1, 2),
            f"an expired record is replaced as if absent: {made} {got}",
        )


@check("records")
async def inserts_race_between_instances(target: StorageTarget) -> None:
    async with World(target) as world:
        first, second = await _records(world), await _records(world)
        if _inserts(first) is None:
            return
        for round_ in range(5):
            key = f"irace{round_}"
            made = await asyncio.gather(
                _inserts(first)(NS, key, _json("a"), ttl_s=60),
                _inserts(second)(NS, key, _json("b"), ttl_s=60),
            )
            winners = [m.record.value for m in made if m.won]
            ensure(len(winners) == 1, f"exactly one insert wins, got {made}")
            losers = [m.record for m in made if not m.won]
            seen = await second.get_record(NS, key)
            ensure(seen is not None and seen.value == winners[0], "every instance sees the winner")
            ensure(losers[0] == seen, f"the loser is handed the winner's record: {losers} {seen}")
