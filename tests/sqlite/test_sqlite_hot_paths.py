"""What the tuned append and load paths must still get right.

Appends remember the next row id between transactions, leave NULL columns out of the INSERT
and encode tool calls and flag metas by hand; loads build rows in an SQL aggregate and share
decoded metas; results come back through a pipe per event loop. Each test here pins down a
behaviour one of those shortcuts could break.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path

import pytest

from hermes_core import NewRow, StorageError, StoredToolCall
from hermes_sqlite.plugin import make_storage
from hermes_sqlite.store import SqliteStorage

from .helpers import assistant, record, user


async def test_row_ids_keep_growing_whoever_wrote_last(storage: SqliteStorage, db_path: Path) -> None:
    await storage.create_session(record("a"))
    other = make_storage(path=db_path)
    await other.open()
    calls: list[list[int]] = []
    try:
        calls.append(await storage.append_rows("a", [user("1")]))
        calls.append(await storage.append_rows("a", [user("2"), assistant("3")]))
        calls.append(await other.append_rows("a", [user("from the other connection")]))
        calls.append(await storage.append_rows("a", [user("4")]))
        calls.append(await storage.create_session(record("b"), [user("5"), user("6")]))
        calls.append(await storage.append_rows("a", [user("7")]))
        calls.append(await storage.rewrite("a", append=[user("8")]))
        calls.append(await other.rewrite("b", append=[user("9")]))
        calls.append(await storage.append_rows("a", [user("10")]))
        with pytest.raises(StorageError):
            # The second row cannot be encoded: the transaction, ids included, is rolled back.
            await storage.append_rows("a", [user("lost"), NewRow(role="tool", content="x", meta={"s": {1}})])
        calls.append(await storage.append_rows("a", [user("11")]))
    finally:
        await other.close()

    flat = [row_id for ids in calls for row_id in ids]
    assert flat == sorted(flat) and len(set(flat)) == len(flat)
    # A rolled-back append uses up no id.
    assert calls[-1] == [calls[-2][-1] + 1]
    contents = [r.content for r in await storage.load_rows("a")]
    assert contents == ["1", "2", "3", "from the other connection", "4", "7", "8", "10", "11"]


async def test_every_combination_of_empty_fields_round_trips(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    rows = [
        user("plain"),
        NewRow(role="user", content="", created_at=5.0, position=None),
        assistant("tokens only", input_tokens=0, output_tokens=0),
        assistant("", reasoning="", model=""),
        NewRow(role="tool", content="r", call_id="tc_1_0", tool_name="t", meta={"is_error": True}),
        NewRow(role="tool", content="r", call_id="tc_1_1", provider_call_id="p", meta={"is_error": 1}),
        NewRow(role="tool", content="r", call_id="tc_1_2", meta={"is_error": None, "n": 1.0}),
        NewRow(role="system", content="m", display_kind="hidden"),
    ]
    ids = []
    for row in rows:  # one at a time: each shape takes the single-row path
        ids += await storage.append_rows("s1", [row])
    ids += await storage.append_rows("s1", rows)  # and all at once, mixed shapes in one transaction

    loaded = await storage.load_rows("s1")
    assert [r.id for r in loaded] == ids
    for new, got in zip(rows + rows, loaded, strict=True):
        assert (got.role, got.content, got.call_id, got.provider_call_id, got.tool_name) == (
            new.role,
            new.content,
            new.call_id,
            new.provider_call_id,
            new.tool_name,
        )
        assert (got.model, got.reasoning, got.input_tokens, got.output_tokens, got.display_kind) == (
            new.model,
            new.reasoning,
            new.input_tokens,
            new.output_tokens,
            new.display_kind,
        )
        assert dict(got.meta) == dict(new.meta)
        # True and 1 are equal in Python but not in JSON: each must come back as it went in.
        assert [type(v) for v in got.meta.values()] == [type(v) for v in new.meta.values()]
    assert loaded[1].created_at == 5.0


async def test_tool_calls_with_awkward_text_round_trip_as_plain_json(
    storage: SqliteStorage, db_path: Path
) -> None:
    await storage.create_session(record("s1"))
    awkward = 'quote " backslash \\ newline \n tab \t nul \x00 line sep \u2028 é 🐍 </script>'
    calls = (
        StoredToolCall("", awkward, "read_file", json.dumps({"path": awkward})),
        StoredToolCall("tc_keep", "p", awkward, ""),
    )

    (row_id,) = await storage.append_rows("s1", [assistant("", tool_calls=calls)])

    (loaded,) = await storage.load_rows("s1")
    assert loaded.tool_calls == (
        StoredToolCall(f"tc_{row_id}_0", awkward, "read_file", json.dumps({"path": awkward})),
        calls[1],
    )
    # Other readers of the file see ordinary JSON objects, as before.
    with sqlite3.connect(db_path) as conn:
        (text,) = conn.execute("SELECT tool_calls FROM messages WHERE id = ?", (row_id,)).fetchone()
    assert json.loads(text)[1] == {
        "call_id": "tc_keep",
        "provider_call_id": "p",
        "name": awkward,
        "arguments": "",
    }


async def test_loaded_metas_never_share_anything_mutable(storage: SqliteStorage) -> None:
    todos = {"is_error": False, "todos": [{"id": "1", "status": "pending"}]}
    flag = {"is_error": False}
    await storage.create_session(
        record("s1"),
        [
            NewRow(role="tool", content=str(i), call_id=f"tc_1_{i}", meta=todos if i % 2 else flag)
            for i in range(4)
        ],
    )

    rows = await storage.load_rows("s1")
    assert [dict(r.meta) for r in rows] == [flag, todos, flag, todos]
    first_list, second_list = rows[1].meta["todos"], rows[3].meta["todos"]
    assert first_list == second_list and first_list is not second_list
    with pytest.raises(TypeError):
        rows[0].meta["is_error"] = True  # type: ignore[index]


async def test_a_corrupt_column_is_a_storage_error_saying_why(storage: SqliteStorage, db_path: Path) -> None:
    (bad,) = await storage.create_session(
        record("s1"), [assistant("x", tool_calls=(StoredToolCall("a", "b", "c", "{}"),))]
    )
    await storage.create_session(record("s2"), [user("fine")])
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE messages SET tool_calls = '[{\"call_id\": ' WHERE id = ?", (bad,))

    with pytest.raises(StorageError, match="invalid JSON"):
        await storage.load_rows("s1")
    with pytest.raises(StorageError, match="invalid JSON"):
        await storage.load_rows("s1", include_archived=True)
    # The failure left nothing behind: other loads and writes go on.
    assert [r.content for r in await storage.load_rows("s2")] == ["fine"]
    await storage.append_rows("s2", [user("more")])
    assert [r.content for r in await storage.load_rows("s2")] == ["fine", "more"]


def test_a_storage_outlives_the_event_loop_that_opened_it(db_path: Path) -> None:
    # One asyncio.run per command, as a CLI does, all with the same storage object.
    storage = make_storage(path=db_path)

    async def first() -> list[int]:
        await storage.open()
        await storage.create_session(record("s1"))
        return await storage.append_rows("s1", [user("one")])

    async def second() -> list[str]:
        await storage.append_rows("s1", [user("two")])
        rows = await asyncio.gather(*(storage.load_rows("s1") for _ in range(3)))
        await storage.close()
        return [r.content for r in rows[0]]

    pipes_before = _open_pipes()
    asyncio.run(first())
    assert asyncio.run(second()) == ["one", "two"]
    if pipes_before is not None:
        assert _open_pipes() == pipes_before  # each loop's wake-up pipe is closed


def _open_pipes() -> set[str] | None:
    """Return this process's open pipes (fd and inode), where the platform tells."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    pipes = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        if target.startswith("pipe:"):
            pipes.add(f"{fd} {target}")
    return pipes
