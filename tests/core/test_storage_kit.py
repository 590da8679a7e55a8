"""The storage kit on its own: session values round trips, listing pages over a real SQLite
table, strict JSON columns, read-only metas, row values and twins."""

from __future__ import annotations

import copy
import dataclasses
import sqlite3
from typing import Any

import pytest

from hermes_core import (
    ImagePart,
    InvalidValue,
    NewRow,
    Row,
    SessionRecord,
    StoredToolCall,
    TextPart,
    storage_kit,
)


def record(session_id: str, updated_at: float, **fields: Any) -> SessionRecord:
    return SessionRecord(
        id=session_id, source="api", cwd="/w", profile="p", created_at=1.0, updated_at=updated_at, **fields
    )


def test_a_session_goes_to_column_values_and_back_unchanged() -> None:
    original = record("s1", 5.0, title="Fix it", usage={"input_tokens": 3}, extra={"k": [1]}, model="m")
    values = storage_kit.session_params(original, now=9.0)
    assert dict(zip(storage_kit.SESSION_COLUMNS, values, strict=True))["usage"] == '{"input_tokens":3}'
    back = storage_kit.session_from_values((*values, 4, "hello"))
    assert back == dataclasses.replace(original, message_count=4, preview="hello")
    assert storage_kit.session_from_values((*values, 0)).preview == ""
    # Zero timestamps become "now"; empty mappings are NULL.
    fresh = storage_kit.session_params(SessionRecord(id="s2", source="", cwd="", profile=""), now=9.0)
    assert fresh[-2:] == (9.0, 9.0) and fresh[12:14] == (None, None)
    assert storage_kit.session_value("extra", {}) is None and storage_kit.session_value("title", "t") == "t"


@pytest.fixture
def listing() -> tuple[sqlite3.Connection, storage_kit.SessionListing]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE sessions ({', '.join(storage_kit.SESSION_COLUMNS)}, hidden INTEGER)")
    marks = ", ".join("?" * len(storage_kit.SESSION_COLUMNS))
    sessions = [
        record("a", 1.0, title="Alpha ÉTÉ"),
        record("b", 2.0, title="beta"),
        record("c", 2.0, title="gamma"),
        SessionRecord(id="d", source="tool", cwd="/w", profile="p", created_at=1.0, updated_at=3.0),
        SessionRecord(id="e", source="api", cwd="/other", profile="p", created_at=1.0, updated_at=4.0),
        record("z", 9.0, title="alpha, but hidden"),  # fails the backend's own condition
    ]
    for session in sessions:
        conn.execute(
            f"INSERT INTO sessions VALUES ({marks}, ?)",
            (*storage_kit.session_params(session, 0.0), int(session.id == "z")),
        )
    conn.create_function("fold", 1, lambda text: text.casefold() if isinstance(text, str) else None)
    kit = storage_kit.SessionListing(
        select=f"SELECT {', '.join('s.' + c for c in storage_kit.SESSION_COLUMNS)}, 0, NULL FROM sessions s",
        always="s.hidden = 0",
        mark="?",
        title_contains="instr(fold(s.title), ?) > 0",
        source_not_in=lambda sources: (f"s.source NOT IN ({', '.join('?' * len(sources))})", sources),
    )
    return conn, kit


def page(conn: sqlite3.Connection, kit: storage_kit.SessionListing, limit: int, **filters: Any) -> Any:
    sql, params = kit.query(limit, **filters)
    return kit.page(conn.execute(sql, params).fetchall(), limit)


def test_a_listing_pages_newest_first_and_the_cursor_continues_exactly(listing: Any) -> None:
    conn, kit = listing
    first = page(conn, kit, 2)
    assert [s.id for s in first.sessions] == ["e", "d"] and first.next_cursor is not None
    second = page(conn, kit, 2, cursor=first.next_cursor)
    assert [s.id for s in second.sessions] == ["c", "b"]  # equal updated_at: by id, newest first
    last = page(conn, kit, 2, cursor=second.next_cursor)
    assert [s.id for s in last.sessions] == ["a"] and last.next_cursor is None


def test_a_listing_filters_by_workspace_title_and_source(listing: Any) -> None:
    conn, kit = listing
    assert [s.id for s in page(conn, kit, 10, cwd="/w").sessions] == ["d", "c", "b", "a"]
    assert [s.id for s in page(conn, kit, 10, title="été").sessions] == ["a"]  # folded, not ASCII only
    shown = page(conn, kit, 10, hidden_sources=("tool", "tool"))
    assert [s.id for s in shown.sessions] == ["e", "c", "b", "a"]


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "3"])
def test_a_bad_limit_is_refused(listing: Any, limit: Any) -> None:
    with pytest.raises(InvalidValue, match="limit"):
        listing[1].query(limit)


@pytest.mark.parametrize(
    "cursor", ["not-a-cursor", "W1tdXQ", storage_kit.encode_cursor(1.0, "a")[:-3] + "!!"]
)
def test_a_cursor_not_made_by_the_kit_is_refused(listing: Any, cursor: str) -> None:
    with pytest.raises(InvalidValue, match="invalid cursor"):
        listing[1].query(5, cursor=cursor)


def test_json_columns_are_compact_and_decoding_is_strict() -> None:
    assert storage_kit.dump_json({"é": [1, None]}) == '{"é":[1,null]}'
    assert storage_kit.decode_json('{"a":1}') == {"a": 1}
    for corrupt in ['{"a":1} trailing', '[["a", ', "", "nope"]:
        with pytest.raises(ValueError, match="invalid JSON in the database"):
            storage_kit.decode_json(corrupt)
    with pytest.raises(ValueError, match="invalid JSON in the database"):
        storage_kit.load_meta('{"a":1}x')
    with pytest.raises(ValueError, match="expected a JSON object"):
        storage_kit.load_mapping("[1]")
    assert storage_kit.load_mapping(None) == {} and storage_kit.dump_mapping({}) is None


def test_loaded_metas_are_read_only_and_share_nothing_mutable() -> None:
    meta = storage_kit.load_meta('{"is_error":false}')
    with pytest.raises(TypeError, match="read-only"):
        meta["x"] = 1  # type: ignore[index]
    assert copy.copy(meta) is meta and dict(meta) == {"is_error": False}
    nested = storage_kit.load_meta('{"a":{"b":1}}')
    again = storage_kit.load_meta('{"a":{"b":1}}')
    assert nested == again and nested["a"] is not again["a"]  # not memoised: holds a dict
    with pytest.raises(TypeError):
        nested["a"]["b"] = 2
    assert storage_kit.load_meta(None) is storage_kit.EMPTY_META
    assert storage_kit.dump_meta({"is_error": False}) == '{"is_error":false}'
    assert storage_kit.dump_meta({"n": 1}) == '{"n":1}' and storage_kit.dump_meta({}) is None


def test_parts_round_trip_and_anything_else_is_refused() -> None:
    parts = (TextPart("look"), ImagePart(data=b"\x89PNG", mime="image/png"), ImagePart(url="https://x/y.jpg"))
    text = storage_kit.dump_parts(parts)
    assert text is not None and storage_kit.load_parts(text) == parts
    assert storage_kit.dump_parts(()) is None and storage_kit.load_parts(None) == ()
    with pytest.raises(TypeError, match="not a content part"):
        storage_kit.dump_parts(["text"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown content part type"):
        storage_kit.load_parts('[{"type":"audio"}]')


def test_a_new_rows_values_follow_the_column_names() -> None:
    row = NewRow(
        role="tool", content="x", call_id="tc_1_0", tool_name="read", meta={"is_error": True}, input_tokens=3
    )
    values = dict(
        zip(storage_kit.NEW_ROW_COLUMNS, storage_kit.new_row_values(row, 7.0, '["t"]'), strict=True)
    )
    assert values == {
        "position": None,
        "role": "tool",
        "content": "x",
        "parts": None,
        "tool_calls": '["t"]',
        "call_id": "tc_1_0",
        "provider_call_id": None,
        "tool_name": "read",
        "display_kind": None,
        "model": None,
        "reasoning": None,
        "input_tokens": 3,
        "output_tokens": None,
        "meta": '{"is_error":true}',
        "created_at": 7.0,
    }
    assert set(storage_kit.NEW_ROW_COLUMNS) < set(storage_kit.ROW_FIELDS)
    with pytest.raises(TypeError, match="role and content must be strings"):
        storage_kit.new_row_values(NewRow(role="user", content=None), 7.0, None)  # type: ignore[arg-type]


def test_twins_become_rows_equal_to_constructed_ones() -> None:
    twin = storage_kit.ROW_TWIN
    assert twin is not None and storage_kit.TOOL_CALL_TWIN is not None
    values = {name: index for index, name in enumerate(storage_kit.ROW_FIELDS)}
    built: Any = object.__new__(twin)
    for name, value in values.items():
        setattr(built, name, value)
    built.__class__ = Row
    assert type(built) is Row and built == Row(**values)
    call: Any = object.__new__(storage_kit.TOOL_CALL_TWIN)
    call.call_id, call.provider_call_id, call.name, call.arguments = "a", "b", "c", "{}"
    call.__class__ = StoredToolCall
    assert call == StoredToolCall("a", "b", "c", "{}")


async def test_retried_calls_again_while_the_connection_is_lost_and_no_more() -> None:
    import asyncio

    calls = 0

    class Lost(Exception):
        pass

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise Lost
        return "rows"

    assert await storage_kit.retried(flaky, Lost, 3) == "rows" and calls == 3
    calls = 0
    with pytest.raises(Lost):
        await storage_kit.retried(flaky, Lost, 2)  # the last try's failure is the caller's
    assert calls == 2

    # One check at a time; settle waits for it, close stops it.
    check = storage_kit.PoolCheck()
    gate = asyncio.Event()
    started = 0

    async def pool_check() -> None:
        nonlocal started
        started += 1
        await gate.wait()

    check.start(pool_check, "t")
    check.start(pool_check, "t")
    await asyncio.sleep(0)
    assert check.running and started == 1
    await check.settle(0.01)  # bounded: the check still runs
    gate.set()
    await check.settle(5)
    assert not check.running
    check.start(pool_check, "t")
    await check.close()
    assert not check.running
