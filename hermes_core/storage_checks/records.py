"""Conformance checks of durable records (:class:`~hermes_core.record_store.RecordStore`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hermes_core.record_store import Expect, RecordStore
from hermes_core.storage_checks import StorageTarget, World, check, ensure, until

NS = "conformance.records"


async def _records(world: World) -> RecordStore:
    storage: Any = await world.storage()
    for name in ("get_record", "put_record", "claim_record", "list_records", "sweep_records"):
        ensure(callable(getattr(storage, name, None)), f"the backend does not implement records: no {name}")
    store: RecordStore = storage
    return store


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@check("records")
async def put_and_get(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        ensure(await store.get_record(NS, "none") is None, "an unknown key reads as None")
        value = {"text": "héllo ☃", "n": [1, 2.5, None, True], "nested": {"a": {}}}
        made = await store.put_record(NS, "k1", _json(value), scope="alice")
        ensure(made is not None, "an unconditional put writes")
        got = await store.get_record(NS, "k1")
        ensure(got is not None and got.value == value, f"the value round-trips: {got}")
        assert got is not None
        ensure(
            got.scope == "alice" and got.owner is None and got.epoch == 0, f"a put record is unheld: {got}"
        )
        ensure(
            got.version == 1 and got.created_at == got.updated_at and got.expires_at is None, f"fresh: {got}"
        )
        await asyncio.sleep(0.002)
        again = await store.put_record(NS, "k1", _json("second"), scope="alice")
        ensure(again is not None and again.version == 2, "a replacing put bumps the version")
        assert again is not None
        ensure(
            again.created_at == got.created_at and again.updated_at > got.updated_at,
            "created stays, updated moves",
        )
        ensure(await store.get_record("conformance.other", "k1") is None, "namespaces are separate")


@check("records")
async def conditional_put(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        ensure(
            await store.put_record(NS, "c", _json(1), expect=Expect(version=1)) is None,
            "expect on absent fails",
        )
        ensure(await store.get_record(NS, "c") is None, "a failed conditional put writes nothing")
        await store.put_record(NS, "c", _json(1))
        ensure(
            await store.put_record(NS, "c", _json(2), expect=Expect(version=7)) is None,
            "a wrong version fails",
        )
        current = await store.get_record(NS, "c")
        ensure(current is not None and current.value == 1, "a failed put changes nothing")
        written = await store.put_record(NS, "c", _json(3), expect=Expect(version=1, held=False))
        ensure(written is not None and written.value == 3, "a matching expectation writes")


@check("records")
async def claims(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        mine = await store.claim_record(NS, "job", _json({"step": 1}), owner="a", scope="s")
        ensure(
            mine.won and mine.record.owner == "a" and mine.record.epoch == 1,
            f"an absent key is claimed: {mine}",
        )
        theirs = await store.claim_record(NS, "job", _json("x"), owner="b")
        ensure(not theirs.won and theirs.record.owner == "a", f"a fresh held record is not taken: {theirs}")
        ensure(theirs.record.value == {"step": 1}, "a lost claim returns the holder's record")
        again = await store.claim_record(NS, "job", _json("y"), owner="a", stale_after_s=60)
        ensure(not again.won, "a fresh record is not taken, even by its owner")
        fenced = await store.put_record(
            NS, "job", _json({"step": 2}), scope="s", expect=Expect(owner="a", epoch=1)
        )
        ensure(
            fenced is not None and fenced.owner == "a" and fenced.epoch == 1,
            "a fenced put keeps owner and epoch",
        )
        ensure(
            await store.put_record(NS, "job", _json("z"), expect=Expect(owner="b")) is None,
            "a put fenced on another owner fails",
        )


@check("records")
async def stale_claims_are_taken(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        await store.claim_record(NS, "lease", _json(1), owner="a")

        async def taken() -> bool:
            claim = await store.claim_record(NS, "lease", _json(2), owner="b", stale_after_s=0.2)
            return claim.won

        await until(taken, "a stale record to be claimed")
        now = await store.get_record(NS, "lease")
        ensure(
            now is not None and now.owner == "b" and now.epoch == 2,
            f"a taken record has the next epoch: {now}",
        )
        ensure(
            await store.touch_record(NS, "lease", expect=Expect(owner="a", epoch=1)) is None,
            "the former owner's fenced touch fails",
        )


@check("records")
async def touch_keeps_value_and_version(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        claim = await store.claim_record(NS, "t", _json("v"), owner="a")
        await asyncio.sleep(0.002)
        touched = await store.touch_record(NS, "t", expect=Expect(owner="a"), ttl_s=60)
        ensure(touched is not None and touched.version == claim.record.version, "touch keeps the version")
        assert touched is not None
        ensure(
            touched.updated_at > claim.record.updated_at and touched.expires_at is not None,
            "touch moves time",
        )
        kept = await store.touch_record(NS, "t")
        ensure(
            kept is not None and kept.expires_at == touched.expires_at, "a touch without ttl keeps the expiry"
        )
        ensure(await store.touch_record(NS, "none") is None, "touching an absent record gives None")

        async def alive() -> bool:
            # A held record touched within stale_after_s is never stale.
            await store.touch_record(NS, "t", expect=Expect(owner="a"))
            return not (await store.claim_record(NS, "t", _json("x"), owner="b", stale_after_s=5)).won

        ensure(await alive(), "a record its owner keeps touching is not taken")


@check("records")
async def release_and_delete(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        claim = await store.claim_record(NS, "r", _json("working"), owner="a")
        ensure(
            await store.release_record(NS, "r", expect=Expect(owner="b")) is None, "only the owner releases"
        )
        done = await store.release_record(NS, "r", expect=Expect(owner="a", epoch=1), data=_json("done"))
        ensure(done is not None and done.owner is None and done.epoch == 1, f"released: {done}")
        assert done is not None
        ensure(
            done.value == "done" and done.version == claim.record.version + 1, "the final value is written"
        )
        kept = await store.release_record(NS, "r", expect=Expect(held=False))
        ensure(kept is not None and kept.value == "done", "a release without data keeps the value")
        stays = await store.claim_record(NS, "r", _json("again"), owner="c", stale_after_s=0.001)
        ensure(not stays.won and stays.record.value == "done", "a released record is never claimed")
        ensure(
            not await store.delete_record(NS, "r", expect=Expect(owner="c")), "a failed expectation keeps it"
        )
        ensure(await store.delete_record(NS, "r"), "delete says it deleted")
        ensure(not await store.delete_record(NS, "r"), "a second delete finds nothing")
        ensure(await store.get_record(NS, "r") is None, "deleted")


@check("records")
async def expiry_and_sweep(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        await store.put_record(NS, "brief", _json(1), scope="x", ttl_s=0.2)
        await store.put_record(NS, "lasting", _json(2), scope="x")
        made = await store.get_record(NS, "brief")
        ensure(made is not None and made.expires_at is not None, "a ttl sets expires_at")

        async def gone() -> bool:
            return await store.get_record(NS, "brief") is None

        await until(gone, "an expired record to read as absent")
        ensure(await store.count_records(NS, scope="x") == 1, "count leaves expired records out")
        page = await store.list_records(NS)
        ensure([r.key for r in page.records] == ["lasting"], "listings leave expired records out")
        await store.put_record(NS, "brief2", _json(3), ttl_s=0.2)
        claim = await store.claim_record(NS, "brief", _json("new"), owner="o")
        ensure(claim.won and claim.record.epoch == 1, "an expired record is claimed as new")

        async def swept() -> bool:
            await store.sweep_records(NS)
            return await store.count_records(NS) == 2

        await until(swept, "sweep to delete expired records")


@check("records")
async def listing_filters_and_pages(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        for n in range(7):
            scope = "even" if n % 2 == 0 else "odd"
            if n < 3:
                await store.claim_record(NS, f"k{n}", _json(n), owner="worker", scope=scope)
            else:
                await store.put_record(NS, f"k{n}", _json(n), scope=scope)
            await asyncio.sleep(0.002)
        keys: list[str] = []
        cursor = None
        while True:
            page = await store.list_records(NS, limit=3, cursor=cursor)
            keys += [r.key for r in page.records]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        ensure(
            keys == [f"k{n}" for n in range(6, -1, -1)], f"pages cover each record once, newest first: {keys}"
        )
        evens = await store.list_records(NS, scope="even")
        ensure([r.key for r in evens.records] == ["k6", "k4", "k2", "k0"], "scope filters")
        held = await store.list_records(NS, held=True)
        ensure(sorted(r.key for r in held.records) == ["k0", "k1", "k2"], "held=True lists held records")
        free = await store.list_records(NS, held=False)
        ensure(len(free.records) == 4, "held=False lists the others")
        owned = await store.list_records(NS, owner="worker", scope="odd")
        ensure([r.key for r in owned.records] == ["k1"], "owner and scope filter together")
        ensure(await store.count_records(NS, scope="odd") == 3, "count by scope")


@check("records")
async def evict_keeps_the_newest(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        for n in range(6):
            await store.put_record(NS, f"e{n}", _json(n), scope="a" if n < 4 else "b")
            await asyncio.sleep(0.002)
        ensure(await store.evict_records(NS, keep=2, scope="a") == 2, "evict deletes beyond keep")
        ensure(await store.count_records(NS, scope="a") == 2, "two left in scope a")
        left = [r.key for r in (await store.list_records(NS, scope="a")).records]
        ensure(left == ["e3", "e2"], f"the newest stay: {left}")
        ensure(await store.evict_records(NS, keep=10) == 0, "nothing beyond keep, nothing deleted")


@check("records")
async def claims_race_between_instances(target: StorageTarget) -> None:
    async with World(target) as world:
        first, second = await _records(world), await _records(world)
        for round_ in range(5):
            key = f"race{round_}"
            claims = await asyncio.gather(
                first.claim_record(NS, key, _json("a"), owner="a"),
                second.claim_record(NS, key, _json("b"), owner="b"),
            )
            winners = [c.record.owner for c in claims if c.won]
            ensure(len(winners) == 1, f"exactly one claim wins, got {winners}")
            seen = await second.get_record(NS, key)
            ensure(seen is not None and seen.owner == winners[0], "every instance sees the winner")


def _updates(store: RecordStore) -> Any:
    """The backend's ``update_records`` (optional, :class:`RecordUpdates`), or None."""
    update = getattr(store, "update_records", None)
    return update if callable(update) else None


@check("records")
async def updates_change_several_records_in_one_step(target: StorageTarget) -> None:
    async with World(target) as world:
        store = await _records(world)
        update = _updates(store)
        if update is None:
            return  # an optional part of the contract
        held = await store.claim_record(NS, "u2", _json(5), owner="o", scope="s", ttl_s=3600)
        seen: list[list[str | None]] = []

        def nothing(texts: list[str | None]) -> list[str] | None:
            seen.append(texts)
            return None

        ensure(await update(NS, ["u1", "u2"], nothing) is None, "a change returning None writes nothing")
        ensure(seen == [[None, _json(5)]], f"the change sees absent as None and present as data: {seen}")
        ensure(await store.get_record(NS, "u1") is None, "nothing was written")
        written = await update(NS, ["u1", "u2"], lambda texts: [_json(1), _json(6)])
        ensure(len(written) == 2 and [r.value for r in written] == [1, 6], f"both written: {written}")
        new, old = await store.get_record(NS, "u1"), await store.get_record(NS, "u2")
        ensure(new is not None and new.version == 1 and new.owner is None and new.epoch == 0, f"{new}")
        ensure(
            old is not None
            and old.value == 6
            and old.version == held.record.version + 1
            and (old.owner, old.epoch, old.scope) == ("o", held.record.epoch, "s")
            and old.expires_at == held.record.expires_at,
            f"an update keeps owner, epoch, scope and expiry and bumps the version: {old}",
        )
        stale = Expect(version=held.record.version)
        late = await store.put_record(NS, "u2", _json(0), expect=stale)
        ensure(late is None, "a compare-and-set on the version before the update fails")


@check("records")
async def updates_race_between_instances(target: StorageTarget) -> None:
    async with World(target) as world:
        first, second = await _records(world), await _records(world)
        if _updates(first) is None:
            return

        def bump(texts: list[str | None]) -> list[str]:
            values = [0 if text is None else json.loads(text) for text in texts]
            if values[0] != values[1]:
                raise AssertionError(f"the pair was seen half written: {values}")
            return [_json(v + 1) for v in values]

        await asyncio.gather(
            *(_updates(store)(NS, ["pa", "pb"], bump) for _ in range(20) for store in (first, second))
        )
        pair = [await second.get_record(NS, key) for key in ("pa", "pb")]
        values = [r.value if r is not None else None for r in pair]
        ensure(values == [40, 40], f"no update is lost between instances: {values}")
