"""Conformance checks of sessions, rows and the writer lease (``hermes_core/storage.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_core.errors import HermesError
from hermes_core.storage import NewRow, RecordClaim, SessionRecord, StoredToolCall
from hermes_core.storage_checks import StorageTarget, World, check, ensure, until


def _record(session_id: str, **fields: object) -> SessionRecord:
    base: dict[str, object] = {"id": session_id, "source": "embed", "cwd": "/work", "profile": "default"}
    base.update(fields)
    return SessionRecord(**base)  # type: ignore[arg-type]


# -- sessions -------------------------------------------------------------------------------------


@check("sessions")
async def create_and_get(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        ensure(await storage.get_session("s1") is None, "an unknown session must read as None")
        ids = await storage.create_session(
            _record("s1", title="Ünïcode title", model="mock:echo", usage={"input": 3}, extra={"k": "v"}),
            [NewRow(role="user", content="hello world"), NewRow(role="assistant", content="hi")],
        )
        ensure(len(ids) == 2 and ids[0] < ids[1], f"create_session must return increasing row ids, got {ids}")
        got = await storage.get_session("s1")
        ensure(got is not None, "a created session must be found")
        assert got is not None
        ensure(got.title == "Ünïcode title" and got.model == "mock:echo", f"fields must round-trip: {got}")
        ensure(
            dict(got.usage) == {"input": 3} and dict(got.extra) == {"k": "v"}, "usage and extra round-trip"
        )
        ensure(got.message_count == 2, f"message_count counts active rows: {got.message_count}")
        ensure(got.preview == "hello world", f"preview is the first user message: {got.preview!r}")
        ensure(got.created_at > 0 and got.updated_at >= got.created_at, "zero timestamps mean now")


@check("sessions")
async def creating_twice_fails(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        await storage.create_session(_record("twice"))
        try:
            await storage.create_session(_record("twice"))
        except HermesError:
            return
        raise AssertionError("creating a session that exists must raise StorageError")


@check("sessions")
async def update_changes_fields(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        await storage.create_session(_record("u1"))
        before = await storage.get_session("u1")
        await storage.update_session("u1", {"title": "new title", "cwd": "/elsewhere"})
        after = await storage.get_session("u1")
        ensure(before is not None and after is not None, "the session must stay")
        assert before is not None and after is not None
        ensure(
            after.title == "new title" and after.cwd == "/elsewhere", f"update_session must write: {after}"
        )
        ensure(after.updated_at >= before.updated_at, "update_session bumps updated_at")


@check("sessions")
async def rows_and_fields_in_one_write(target: StorageTarget) -> None:
    """``append_rows_and_update`` (optional, ``hermes_core.storage.AppendUpdates``): the rows and
    the session's columns are stored together; a refused write stores neither."""
    async with World(target) as world:
        storage, other = await world.storage(), await world.storage()
        together = getattr(storage, "append_rows_and_update", None)
        if together is None:
            return  # optional: the kernel appends, then updates
        await storage.create_session(_record("au1", usage={"input": 1}))
        first = await storage.append_rows("au1", [NewRow(role="user", content="question")])
        ids = await together(
            "au1",
            [NewRow(role="assistant", content="answer", input_tokens=3, output_tokens=5)],
            {"usage": {"input": 4, "output": 5}, "title": "Named now", "title_origin": "derived"},
        )
        ensure(len(ids) == 1 and ids[0] > first[0], f"the row's id follows the earlier ones: {ids}")
        got = await other.get_session("au1")
        ensure(got is not None, "the session stays")
        assert got is not None
        ensure(dict(got.usage) == {"input": 4, "output": 5}, f"the columns are set: {got.usage}")
        ensure(got.title == "Named now" and got.title_origin == "derived", f"every one of them: {got}")
        ensure(got.message_count == 2, f"and the row is stored: {got.message_count}")
        found = await other.find_session_by_title("Named now")
        ensure(found is not None and found.id == "au1", "the title is found as any other title")
        rows = await other.load_rows("au1")
        ensure([r.content for r in rows] == ["question", "answer"], f"rows in order: {rows}")
        ensure(rows[-1].output_tokens == 5, "the row's own fields round-trip")
        for bad in ({"no_such_column": 1}, {"id": "other"}):
            try:
                await together("au1", [NewRow(role="assistant", content="lost")], bad)
            except HermesError:
                pass
            else:
                ensure(False, f"a field that is not a session column must be refused: {bad}")
        try:
            await together("au-missing", [NewRow(role="assistant", content="lost")], {"title": "x"})
        except HermesError:
            pass
        else:
            ensure(False, "a session that is not stored must be refused")
        rows = await other.load_rows("au1")
        ensure([r.content for r in rows] == ["question", "answer"], f"a refused write adds no row: {rows}")
        ensure(await other.load_rows("au-missing") == [], "nor rows of a session not stored")


@check("sessions")
async def listing_pages_newest_first(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        for n in range(5):
            await storage.create_session(_record(f"l{n}", title=f"Topic {n}", cwd=f"/w{n % 2}"))
            await asyncio.sleep(0.002)  # distinct activity times
        await storage.create_session(_record("hidden", source="tool"))
        seen: list[str] = []
        cursor = None
        while True:
            page = await storage.list_sessions(limit=2, cursor=cursor)
            seen += [s.id for s in page.sessions]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        ensure(
            seen == [f"l{n}" for n in range(4, -1, -1)],
            f"pages must cover every session once, newest first: {seen}",
        )
        only = await storage.list_sessions(cwd="/w1")
        ensure(sorted(s.id for s in only.sessions) == ["l1", "l3"], "cwd filters exactly")
        titled = await storage.list_sessions(title="topic 3")
        ensure([s.id for s in titled.sessions] == ["l3"], "title filters by substring, ignoring case")


@check("sessions")
async def find_by_title_and_channel(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        await storage.create_session(_record("t1", title="same", channel_key="chan"))
        await asyncio.sleep(0.002)
        await storage.create_session(_record("t2", title="same", channel_key="chan"))
        found = await storage.find_session_by_title("same")
        ensure(found is not None and found.id == "t2", "find_session_by_title returns the most recent")
        ensure(await storage.find_session_by_title("other") is None, "an unknown title finds nothing")
        ensure(await storage.latest_session_for_channel("chan") == "t2", "the newest session of a channel")
        ensure(await storage.latest_session_for_channel("none") is None, "an unknown channel has none")


# -- rows -----------------------------------------------------------------------------------------


@check("rows")
async def append_and_load_in_order(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        await storage.create_session(_record("r1"), [NewRow(role="user", content="one")])
        ids = await storage.append_rows(
            "r1", [NewRow(role="assistant", content="two"), NewRow(role="user", content="three")]
        )
        ensure(len(ids) == 2 and ids[0] < ids[1], "append_rows returns increasing ids")
        rows = await storage.load_rows("r1")
        ensure(
            [r.content for r in rows] == ["one", "two", "three"],
            f"rows load in order: {[r.content for r in rows]}",
        )
        ensure([r.id for r in rows][1:] == ids, "the returned ids are the rows' ids")
        ensure(all(r.active and r.session_id == "r1" for r in rows), "new rows are active")


@check("rows")
async def tool_call_ids_and_positions(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        await storage.create_session(_record("r2"))
        call = StoredToolCall(call_id="", provider_call_id="p1", name="read_file", arguments="{}")
        [rid] = await storage.append_rows("r2", [NewRow(role="assistant", content="", tool_calls=(call,))])
        [row] = await storage.load_rows("r2")
        ensure(
            row.tool_calls[0].call_id == f"tc_{rid}_0",
            f"a placeholder call id becomes tc_<row>_<i>: {row.tool_calls}",
        )
        [late] = await storage.append_rows(
            "r2", [NewRow(role="user", content="first", position=row.position - 1)]
        )
        rows = await storage.load_rows("r2")
        ensure(rows[0].id == late, "a row's position orders it before later ids")


@check("rows")
async def rewrite_archives_and_appends(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        ids = await storage.create_session(
            _record("r3"), [NewRow(role="user", content="a"), NewRow(role="assistant", content="b")]
        )
        new = await storage.rewrite(
            "r3",
            archive_row_ids=[ids[1]],
            archived_reason="rewind",
            append=[NewRow(role="assistant", content="c")],
            session_fields={"title": "rewound"},
        )
        active = await storage.load_rows("r3")
        ensure(
            [r.content for r in active] == ["a", "c"],
            f"archived rows leave the active list: {[r.content for r in active]}",
        )
        every = await storage.load_rows("r3", include_archived=True)
        gone = [r for r in every if r.id == ids[1]]
        ensure(
            gone and not gone[0].active and gone[0].archived_reason == "rewind", "archived rows stay, marked"
        )
        ensure(active[-1].id == new[0], "rewrite returns the appended ids")
        record = await storage.get_session("r3")
        ensure(
            record is not None and record.title == "rewound", "rewrite updates the session in the same call"
        )


@check("rows")
async def row_meta_merges(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        [rid] = await storage.create_session(
            _record("r4"), [NewRow(role="tool", content="x", call_id="c", meta={"a": 1})]
        )
        await storage.update_row_meta(rid, {"b": 2})
        [row] = await storage.load_rows("r4")
        ensure(dict(row.meta) == {"a": 1, "b": 2}, f"update_row_meta merges keys: {dict(row.meta)}")


# -- leases ---------------------------------------------------------------------------------------


@check("leases")
async def one_holder_at_a_time(target: StorageTarget) -> None:
    async with World(target) as world:
        first, second = await world.storage(), await world.storage()
        ensure(await first.acquire_lease("l1", "owner-a", 30) is None, "a free lease is granted")
        ensure(await second.acquire_lease("l1", "owner-b", 30) == "owner-a", "a held lease names its holder")
        ensure(await first.acquire_lease("l1", "owner-a", 30) is None, "the holder may take it again")
        ensure(await first.renew_lease("l1", "owner-a", 30), "the holder renews")
        ensure(not await second.renew_lease("l1", "owner-b", 30), "someone else cannot renew")
        await second.release_lease("l1", "owner-b")  # not theirs: nothing happens
        ensure(
            await second.acquire_lease("l1", "owner-b", 30) == "owner-a",
            "releasing someone else's lease does nothing",
        )
        await first.release_lease("l1", "owner-a")
        ensure(await second.acquire_lease("l1", "owner-b", 30) is None, "a released lease is granted")


@check("leases")
async def take_over_and_expiry(target: StorageTarget) -> None:
    async with World(target) as world:
        storage = await world.storage()
        await storage.create_session(_record("l2"))
        ensure(await storage.acquire_lease("l2", "dead", 30) is None, "granted")
        ensure(
            await storage.acquire_lease("l2", "new", 30, take_over="other") == "dead",
            "take_over names a holder",
        )
        ensure(
            await storage.acquire_lease("l2", "new", 30, take_over="dead") is None,
            "take_over of that holder is granted",
        )
        ensure(await storage.acquire_lease("l3", "short", 0.2) is None, "granted")

        async def expired() -> bool:
            return await storage.acquire_lease("l3", "later", 30) is None

        await until(expired, "an expired lease to be granted to someone else")


@check("leases")
async def a_leased_create_takes_the_lease_with_the_session(target: StorageTarget) -> None:
    """``create_leased_session`` (optional, ``hermes_core.storage.LeasedCreate``): the session, its
    rows and its lease in one write; an id leased by another live holder is refused untouched."""
    async with World(target) as world:
        first, second = await world.storage(), await world.storage()
        create = getattr(first, "create_leased_session", None)
        if create is None:
            return  # optional: the kernel takes the lease on its own before the first write
        ids = await create(_record("l4"), [NewRow(role="user", content="hi")], "owner-a", 30)
        ensure(len(ids) == 1, f"the first rows are stored: {ids}")
        ensure(await second.acquire_lease("l4", "owner-b", 30) == "owner-a", "the lease is the creator's")
        ensure(await first.renew_lease("l4", "owner-a", 30), "the creator renews it")
        try:
            await create(_record("l4"), [], "owner-a", 30)
        except HermesError:
            pass
        else:
            ensure(False, "creating a stored session again must fail")
        ensure(await second.acquire_lease("l5", "owner-b", 30) is None, "a placeholder lease is granted")
        try:
            await create(_record("l5"), [NewRow(role="user", content="hi")], "owner-a", 30)
        except HermesError:
            pass
        else:
            ensure(False, "an id leased by another live holder must be refused")
        ensure(await first.get_session("l5") is None, "a refused create stores nothing")
        ensure(await first.acquire_lease("l6", "owner-a", 30) is None, "our own placeholder lease")
        await create(_record("l6"), [NewRow(role="user", content="hi")], "owner-a", 30)
        got = await second.get_session("l6")
        ensure(got is not None and got.message_count == 1, "our own placeholder is filled")
        ensure(await second.acquire_lease("l6", "owner-b", 30) == "owner-a", "and its lease stays ours")


@check("leases")
async def a_leased_create_stores_its_claims_with_the_session(target: StorageTarget) -> None:
    """``create_leased_session(..., claims=...)``: each claimed record is stored for its owner in
    the same write; a live record under a claimed key refuses the whole write (no session, no
    rows, the record untouched); an expired one is replaced."""
    async with World(target) as world:
        first, second = await world.storage(), await world.storage()
        records: Any = second  # a storage that offers create_leased_session keeps records too
        create = getattr(first, "create_leased_session", None)
        if create is None:
            return
        space = "checks.claims"
        ids = await create(
            _record("c1"),
            [NewRow(role="user", content="hi")],
            "owner-a",
            30,
            [RecordClaim(space, "c1", "tenant:a")],
        )
        ensure(len(ids) == 1, f"the first rows are stored: {ids}")
        claimed = await records.get_record(space, "c1")
        ensure(claimed is not None and claimed.owner == "tenant:a", f"the claim is stored: {claimed}")
        ensure(claimed is not None and claimed.data == "{}", "with an empty value")
        ensure(await second.acquire_lease("c1", "owner-b", 30) == "owner-a", "with the lease")
        await records.claim_record(space, "c2", '{"k": 1}', owner="tenant:b")
        try:
            await create(
                _record("c2"),
                [NewRow(role="user", content="hi")],
                "owner-a",
                30,
                [RecordClaim(space, "c2", "tenant:a")],
            )
        except HermesError:
            pass
        else:
            ensure(False, "a claimed key that holds a live record must refuse the write")
        ensure(await second.get_session("c2") is None, "a refused create stores no session")
        held = await records.get_record(space, "c2")
        ensure(
            held is not None and held.owner == "tenant:b" and held.data == '{"k": 1}',
            "nor touches the record",
        )
        two = [RecordClaim(space, "c2a", "tenant:a"), RecordClaim(space, "c2", "tenant:a")]
        try:
            await create(_record("c2a"), [], "owner-a", 30, two)
        except HermesError:
            pass
        else:
            ensure(False, "one claimed key that holds a live record must refuse every claim")
        ensure(await records.get_record(space, "c2a") is None, "so the other claim is not stored either")
        both = [RecordClaim(space, "c4a", "tenant:a"), RecordClaim(space, "c4b", "tenant:a")]
        await create(_record("c4"), [], "owner-a", 30, both)
        for key in ("c4a", "c4b"):
            found = await records.get_record(space, key)
            ensure(found is not None and found.owner == "tenant:a", f"every claim is stored: {key}")
        await records.claim_record(space, "c3", "{}", owner="tenant:b", ttl_s=0.2)

        async def expired() -> bool:
            return await records.get_record(space, "c3") is None

        await until(expired, "the record under c3 to expire")
        await create(_record("c3"), [], "owner-a", 30, [RecordClaim(space, "c3", "tenant:a")])
        replaced = await records.get_record(space, "c3")
        ensure(
            replaced is not None and replaced.owner == "tenant:a",
            f"an expired record is replaced: {replaced}",
        )
        ensure(replaced is not None and replaced.expires_at is None, "by one that does not expire")
