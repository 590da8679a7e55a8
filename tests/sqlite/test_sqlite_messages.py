"""Message rows in the SQLite backend: append, load order, archive, rewrite, meta."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    ImagePart,
    InvalidValue,
    NewRow,
    Row,
    SessionNotFound,
    StorageError,
    StoredToolCall,
    TextPart,
)
from hermes_sqlite.plugin import make_storage
from hermes_sqlite.store import SqliteStorage

from .helpers import assistant, record, user


async def test_append_returns_increasing_ids_and_load_keeps_every_field(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    image = ImagePart(data=b"\x89PNG\r\n\x00\xff", mime="image/png")
    linked = ImagePart(url="https://example.com/cat.jpg", mime="image/jpeg")
    rows = [
        NewRow(role="user", content="look", parts=(TextPart("look"), image, linked), created_at=1234.5),
        NewRow(
            role="assistant",
            content="reading",
            tool_calls=(StoredToolCall("tc_x", "call_1", "read_file", '{"path": "a.py"}'),),
            model="openai:gpt-4.1-mini",
            reasoning="need the file",
            input_tokens=1200,
            output_tokens=40,
        ),
        NewRow(
            role="tool",
            content="print('hi')",
            call_id="tc_x",
            provider_call_id="call_1",
            tool_name="read_file",
            meta={"is_error": False, "todos": [{"id": "1", "status": "done"}]},
        ),
        NewRow(role="system", content="switched", display_kind="model_switch"),
    ]

    ids = await storage.append_rows("s1", rows)
    more = await storage.append_rows("s1", [user("again")])

    assert ids == sorted(ids) and len(set(ids)) == 4 and more[0] > ids[-1]
    loaded = await storage.load_rows("s1")
    assert [r.id for r in loaded] == [*ids, *more]
    first, second, third, fourth = loaded[:4]
    assert first.parts == (TextPart("look"), image, linked)
    assert first.created_at == 1234.5 and first.position == first.id and first.session_id == "s1"
    assert second.tool_calls == (StoredToolCall("tc_x", "call_1", "read_file", '{"path": "a.py"}'),)
    assert (second.model, second.reasoning, second.input_tokens, second.output_tokens) == (
        "openai:gpt-4.1-mini",
        "need the file",
        1200,
        40,
    )
    assert (third.call_id, third.provider_call_id, third.tool_name) == ("tc_x", "call_1", "read_file")
    assert third.meta == {"is_error": False, "todos": [{"id": "1", "status": "done"}]}
    assert fourth.display_kind == "model_switch"
    assert all(r.active and r.archived_reason is None for r in loaded)


async def test_row_ids_are_unique_across_sessions(storage: SqliteStorage) -> None:
    a = await storage.create_session(record("a"), [user("1"), user("2")])
    b = await storage.create_session(record("b"), [user("3")])
    c = await storage.append_rows("a", [user("4")])
    assert len(set(a + b + c)) == 4
    assert [r.id for r in await storage.load_rows("a")] == [*a, *c]


async def test_placeholder_call_ids_are_filled_from_the_row_id(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    calls = (
        StoredToolCall("", "p0", "read_file", "{}"),
        StoredToolCall("keep_me", "p1", "terminal", "{}"),
        StoredToolCall("", "p2", "write_file", "{}"),
    )

    ids = await storage.append_rows(
        "s1", [assistant("", tool_calls=calls), assistant("", tool_calls=calls[:1])]
    )

    first, second = await storage.load_rows("s1")
    assert [c.call_id for c in first.tool_calls] == [f"tc_{ids[0]}_0", "keep_me", f"tc_{ids[0]}_2"]
    assert [c.provider_call_id for c in first.tool_calls] == ["p0", "p1", "p2"]
    assert [c.call_id for c in second.tool_calls] == [f"tc_{ids[1]}_0"]


async def test_a_summary_takes_the_position_of_the_first_row_it_replaces(storage: SqliteStorage) -> None:
    ids = await storage.create_session(
        record("s1"), [user("u1"), assistant("a1"), user("u2"), assistant("a2")]
    )
    rows = await storage.load_rows("s1")
    summary = NewRow(
        role="system", content="summary of u1/a1", display_kind="summary", position=rows[0].position
    )

    new_ids = await storage.rewrite(
        "s1", archive_row_ids=ids[:2], archived_reason="compress", append=[summary]
    )

    active = await storage.load_rows("s1")
    assert [r.content for r in active] == ["summary of u1/a1", "u2", "a2"]
    assert active[0].id == new_ids[0] and active[0].id > ids[-1]
    assert [r.id for r in active[1:]] == ids[2:]  # survivors keep their ids
    everything = await storage.load_rows("s1", include_archived=True)
    assert [r.content for r in everything] == ["u1", "summary of u1/a1", "a1", "u2", "a2"]


async def test_archived_rows_are_hidden_unless_asked_for(storage: SqliteStorage) -> None:
    ids = await storage.create_session(
        record("s1"), [user("u1"), assistant("a1"), user("u2"), assistant("a2")]
    )

    await storage.rewrite("s1", archive_row_ids=ids[2:], archived_reason="rewind")
    # Archiving again does not overwrite the first reason.
    await storage.rewrite("s1", archive_row_ids=ids[1:], archived_reason="reconcile")

    assert [r.id for r in await storage.load_rows("s1")] == ids[:1]
    everything = await storage.load_rows("s1", include_archived=True)
    assert [(r.id, r.active, r.archived_reason) for r in everything] == [
        (ids[0], True, None),
        (ids[1], False, "reconcile"),
        (ids[2], False, "rewind"),
        (ids[3], False, "rewind"),
    ]


async def test_rewrite_appends_and_updates_the_session_together(storage: SqliteStorage) -> None:
    ids = await storage.create_session(record("s1", title="before"), [user("hello"), assistant("hi")])

    new = await storage.rewrite(
        "s1",
        archive_row_ids=[ids[1]],
        archived_reason="reconcile",
        append=[assistant("hi there"), user("next")],
        session_fields={"title": "after"},
    )

    assert len(new) == 2 and new[0] > ids[1]
    assert [r.content for r in await storage.load_rows("s1")] == ["hello", "hi there", "next"]
    got = await storage.get_session("s1")
    assert got is not None and got.title == "after" and got.message_count == 3


@pytest.mark.parametrize(
    "bad",
    [
        {"append": [NewRow(role="assistant", content="x", input_tokens=2**70)]},
        {"append": [NewRow(role="tool", content="x", meta={"handle": object()})]},
        {"append": [user("fine")], "session_fields": {"no_such_column": 1}},
        {"extra_ids": [10_000]},
    ],
    ids=["int-overflow", "unencodable-meta", "bad-session-field", "foreign-row-id"],
)
async def test_a_failing_rewrite_changes_nothing(storage: SqliteStorage, bad: dict[str, Any]) -> None:
    ids = await storage.create_session(record("s1", title="t"), [user("u1"), assistant("a1"), user("u2")])
    before = await storage.get_session("s1")
    await storage.create_session(record("other"), [user("not yours")])

    with pytest.raises((StorageError, InvalidValue)):
        await storage.rewrite(
            "s1",
            archive_row_ids=ids[1:] + bad.get("extra_ids", []),
            archived_reason="rewind",
            append=bad.get("append", ()),
            session_fields=bad.get("session_fields"),
        )

    everything = await storage.load_rows("s1", include_archived=True)
    assert [(r.id, r.active) for r in everything] == [(i, True) for i in ids]
    assert await storage.get_session("s1") == before


async def test_rewrite_cannot_archive_rows_of_another_session(storage: SqliteStorage) -> None:
    await storage.create_session(record("a"), [user("mine")])
    theirs = await storage.create_session(record("b"), [user("theirs")])

    with pytest.raises(StorageError, match="not rows of session a"):
        await storage.rewrite("a", archive_row_ids=theirs, archived_reason="rewind")

    assert [r.active for r in await storage.load_rows("b", include_archived=True)] == [True]


async def test_rows_cannot_go_to_a_session_that_is_not_stored(storage: SqliteStorage) -> None:
    with pytest.raises(SessionNotFound):
        await storage.append_rows("ghost", [user("hello")])
    with pytest.raises(SessionNotFound):
        await storage.append_rows("ghost", [user("one"), user("two")])
    with pytest.raises(SessionNotFound):
        await storage.rewrite("ghost", append=[user("hello")])
    assert await storage.load_rows("ghost") == []
    # A lease may reserve an id before its session is created: rows still need the session, and
    # the holder's writes are refused as "not found", not as a lost lease.
    assert await storage.acquire_lease("reserved", "inst-a", 30) is None
    with pytest.raises(SessionNotFound):
        await storage.append_rows("reserved", [user("too early")])
    await storage.create_session(record("reserved"))
    assert [r.content for r in await storage.load_rows("reserved")] == []
    await storage.append_rows("reserved", [user("now")])
    assert [r.content for r in await storage.load_rows("reserved")] == ["now"]


async def test_an_unencodable_row_is_a_storage_error_and_writes_nothing(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"), [user("ok")])

    with pytest.raises(StorageError):
        await storage.append_rows("s1", [user("fine"), NewRow(role="tool", content="x", meta={"f": {1, 2}})])

    assert [r.content for r in await storage.load_rows("s1")] == ["ok"]


async def test_update_row_meta_merges_keys(storage: SqliteStorage) -> None:
    ids = await storage.create_session(
        record("s1"), [NewRow(role="tool", content="out", call_id="tc_1_0", meta={"is_error": False, "n": 1})]
    )
    assert (await storage.load_rows("s1"))[0].meta == {"is_error": False, "n": 1}  # now cached

    await storage.update_row_meta(ids[0], {"n": 2, "status": "completed"})

    assert (await storage.load_rows("s1"))[0].meta == {"is_error": False, "n": 2, "status": "completed"}
    with pytest.raises(StorageError):
        await storage.update_row_meta(999_999, {"x": 1})


async def test_loaded_meta_is_read_only_but_json_friendly(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"), [NewRow(role="tool", content="x", meta={"a": {"b": 1}})])

    row = (await storage.load_rows("s1"))[0]
    with pytest.raises(TypeError):
        row.meta["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        row.meta["a"]["b"] = 3
    assert json.loads(json.dumps(row.meta)) == {"a": {"b": 1}}
    copy = dict(row.meta)
    copy["a"] = 2
    assert (await storage.load_rows("s1"))[0].meta == {"a": {"b": 1}}


async def test_loads_see_appends_and_rewrites_made_through_this_storage(storage: SqliteStorage) -> None:
    ids = await storage.create_session(record("s1"), [user("u1"), assistant("a1")])
    assert len(await storage.load_rows("s1")) == 2

    more = await storage.append_rows("s1", [user("u2")])
    assert [r.id for r in await storage.load_rows("s1")] == [*ids, *more]

    summary = NewRow(role="system", content="sum", display_kind="summary", position=ids[0])
    await storage.append_rows("s1", [summary])  # sorts first, not last
    assert [r.content for r in await storage.load_rows("s1")] == ["u1", "sum", "a1", "u2"]

    await storage.rewrite("s1", archive_row_ids=more, archived_reason="rewind")
    assert [r.content for r in await storage.load_rows("s1")] == ["u1", "sum", "a1"]


async def test_loads_see_writes_made_by_another_connection(storage: SqliteStorage, db_path: Path) -> None:
    ids = await storage.create_session(record("s1"), [user("u1"), assistant("a1")])
    assert len(await storage.load_rows("s1")) == 2  # cached here

    other = make_storage(path=db_path)
    await other.open()
    try:
        added = await other.append_rows("s1", [user("from elsewhere")])
        assert [r.id for r in await storage.load_rows("s1")] == [*ids, *added]
        await other.rewrite("s1", archive_row_ids=[ids[1]], archived_reason="rewind")
        assert [r.content for r in await storage.load_rows("s1")] == ["u1", "from elsewhere"]
        await other.update_row_meta(ids[0], {"seen": True})
        assert (await storage.load_rows("s1"))[0].meta == {"seen": True}
        # Their write, then ours, with no load in between: the next load still has both.
        theirs = await other.append_rows("s1", [user("theirs")])
        ours = await storage.append_rows("s1", [user("ours")])
        assert [r.id for r in await storage.load_rows("s1")][-2:] == [*theirs, *ours]
    finally:
        await other.close()


async def test_loaded_rows_are_ordinary_frozen_records(storage: SqliteStorage) -> None:
    call = StoredToolCall("tc_x", "call_1", "read_file", '{"path": "a.py"}')
    ids = await storage.create_session(
        record("s1"), [assistant("reading", tool_calls=(call,), model="m", input_tokens=3), user("ok")]
    )
    await storage.rewrite("s1", archive_row_ids=ids[1:], archived_reason="rewind")

    for row in [*await storage.load_rows("s1"), *await storage.load_rows("s1", include_archived=True)]:
        assert type(row) is Row and all(type(c) is StoredToolCall for c in row.tool_calls)
        with pytest.raises(dataclasses.FrozenInstanceError):
            row.content = "changed"  # type: ignore[misc]
        assert dataclasses.replace(row, content="changed").content == "changed"
        assert pickle.loads(pickle.dumps(row)) == row
    first, second = await storage.load_rows("s1", include_archived=True)
    assert first == Row(
        id=ids[0],
        session_id="s1",
        position=ids[0],
        role="assistant",
        content="reading",
        parts=(),
        tool_calls=(call,),
        call_id=None,
        provider_call_id=None,
        tool_name=None,
        display_kind=None,
        active=True,
        archived_reason=None,
        model="m",
        reasoning=None,
        input_tokens=3,
        output_tokens=None,
        meta={},
        created_at=first.created_at,
    )
    assert hash(first.tool_calls[0]) == hash(call)
    assert (second.active, second.archived_reason, second.content) == (False, "rewind", "ok")
