"""Session records in the SQLite backend: create, read, update, title/channel lookup, listing."""

from __future__ import annotations

import pytest

from hermes_core import InvalidValue, SessionNotFound, StorageError
from hermes_sqlite.store import SqliteStorage

from .helpers import assistant, record, user


async def test_create_then_get_returns_every_field(storage: SqliteStorage) -> None:
    rec = record(
        "s1",
        source="acp",
        cwd="/work/project",
        profile="yolo",
        model="openai:gpt-4.1-mini",
        provider="openai",
        reasoning_effort="high",
        title="Fix the parser",
        title_origin="explicit",
        parent_session_id="s0",
        channel_key="agent:main:webui:dm:user-42",
        system_overlay="be brief",
        usage={"input": 10, "output": 5, "cost_usd": 0.25, "estimated": False},
        extra={"client": "zed"},
        created_at=1000.5,
        updated_at=1001.25,
    )
    assert await storage.create_session(rec) == []

    got = await storage.get_session("s1")

    assert got == rec  # message_count is 0 on both
    assert await storage.get_session("nope") is None


async def test_zero_timestamps_mean_now(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1"))
    got = await storage.get_session("s1")
    assert got is not None
    assert got.created_at > 1_600_000_000
    assert got.updated_at >= got.created_at


async def test_create_with_rows_returns_their_ids_and_counts_them(storage: SqliteStorage) -> None:
    ids = await storage.create_session(record("s1"), [user("hi"), assistant("hello")])

    assert len(ids) == 2 and ids[0] < ids[1]
    got = await storage.get_session("s1")
    assert got is not None and got.message_count == 2
    assert [r.id for r in await storage.load_rows("s1")] == ids


async def test_creating_an_existing_session_fails_and_keeps_the_first(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1", title="first"), [user("one")])

    with pytest.raises(StorageError, match="already exists"):
        await storage.create_session(record("s1", title="second"), [user("two")])

    got = await storage.get_session("s1")
    assert got is not None and got.title == "first" and got.message_count == 1
    assert [r.content for r in await storage.load_rows("s1")] == ["one"]


async def test_update_session_sets_fields_and_bumps_updated_at(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1", created_at=100.0, updated_at=100.0))

    await storage.update_session(
        "s1", {"title": "New title", "title_origin": "derived", "usage": {"input": 3}, "model": "mock:echo"}
    )

    got = await storage.get_session("s1")
    assert got is not None
    assert (got.title, got.title_origin, got.model) == ("New title", "derived", "mock:echo")
    assert got.usage == {"input": 3}
    assert got.updated_at > 100.0
    assert got.created_at == 100.0


async def test_update_session_refuses_unknown_fields_and_sessions(storage: SqliteStorage) -> None:
    await storage.create_session(record("s1", title="kept"))

    with pytest.raises(InvalidValue):
        await storage.update_session("s1", {"title": "changed", "colour": "blue"})
    with pytest.raises(InvalidValue):
        await storage.update_session("s1", {"message_count": 3})
    with pytest.raises(SessionNotFound):
        await storage.update_session("missing", {"title": "x"})

    got = await storage.get_session("s1")
    assert got is not None and got.title == "kept"


async def test_find_by_title_picks_the_most_recently_active(storage: SqliteStorage) -> None:
    await storage.create_session(record("old", title="Refactor", updated_at=100.0))
    await storage.create_session(record("new", title="Refactor", updated_at=200.0))
    await storage.create_session(record("other", title="Refactor later", updated_at=300.0))

    found = await storage.find_session_by_title("Refactor")
    assert found is not None and found.id == "new"

    await storage.append_rows("old", [user("back to this one")])  # activity now
    found = await storage.find_session_by_title("Refactor")
    assert found is not None and found.id == "old"

    assert await storage.find_session_by_title("refactor") is None  # exact, not case-folded
    assert await storage.find_session_by_title("Refac") is None


async def test_latest_session_for_channel(storage: SqliteStorage) -> None:
    key = "agent:main:webui:dm:user-42"
    await storage.create_session(record("a", channel_key=key, updated_at=100.0))
    await storage.create_session(record("b", channel_key=key, updated_at=200.0))
    await storage.create_session(record("c", channel_key="someone-else", updated_at=300.0))

    assert await storage.latest_session_for_channel(key) == "b"
    await storage.update_session("a", {"system_overlay": "x"})
    assert await storage.latest_session_for_channel(key) == "a"
    assert await storage.latest_session_for_channel("unknown") is None


async def test_listing_is_newest_first_and_pages_through_everything(storage: SqliteStorage) -> None:
    # Two pairs share an updated_at, so the id breaks the tie.
    stamps = {"s1": 100.0, "s2": 200.0, "s3": 200.0, "s4": 300.0, "s5": 400.0, "s6": 400.0, "s7": 500.0}
    for session_id, stamp in stamps.items():
        await storage.create_session(record(session_id, updated_at=stamp))

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await storage.list_sessions(limit=3, cursor=cursor)
        pages += 1
        seen += [s.id for s in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            break

    assert pages == 3
    assert seen == ["s7", "s6", "s5", "s4", "s3", "s2", "s1"]
    exact = await storage.list_sessions(limit=7)
    assert exact.next_cursor is None and len(exact.sessions) == 7


async def test_listing_moves_a_session_up_when_it_gets_rows(storage: SqliteStorage) -> None:
    await storage.create_session(record("quiet", updated_at=100.0))
    await storage.create_session(record("busy", updated_at=200.0))

    await storage.append_rows("quiet", [user("hello again")])

    page = await storage.list_sessions()
    assert [s.id for s in page.sessions] == ["quiet", "busy"]
    assert [s.message_count for s in page.sessions] == [1, 0]


async def test_listing_filters_by_cwd_and_title(storage: SqliteStorage) -> None:
    await storage.create_session(record("a", cwd="/work/one", title="Fix the Parser"))
    await storage.create_session(record("b", cwd="/work/two", title="parser tests"))
    await storage.create_session(record("c", cwd="/work/one", title="Ünïcode títle"))
    await storage.create_session(record("d", cwd="/work/one/sub", title=None))

    by_cwd = await storage.list_sessions(cwd="/work/one")
    assert {s.id for s in by_cwd.sessions} == {"a", "c"}

    by_title = await storage.list_sessions(title="PARSER")
    assert {s.id for s in by_title.sessions} == {"a", "b"}

    assert [s.id for s in (await storage.list_sessions(title="üNÏcode")).sessions] == ["c"]
    assert [s.id for s in (await storage.list_sessions(cwd="/work/one", title="parser")).sessions] == ["a"]
    assert (await storage.list_sessions(title="%")).sessions == []  # no LIKE wildcards


async def test_listing_hides_sources(storage: SqliteStorage) -> None:
    await storage.create_session(record("main", source="tui"))
    await storage.create_session(record("sub", source="tool", parent_session_id="main"))
    await storage.create_session(record("web", source="api"))

    assert {s.id for s in (await storage.list_sessions()).sessions} == {"main", "web"}
    assert {s.id for s in (await storage.list_sessions(hidden_sources=())).sessions} == {"main", "sub", "web"}
    hidden = await storage.list_sessions(hidden_sources=("tool", "api"))
    assert [s.id for s in hidden.sessions] == ["main"]


async def test_message_count_counts_active_rows_only(storage: SqliteStorage) -> None:
    ids = await storage.create_session(record("s1"), [user("a"), assistant("b"), user("c")])
    await storage.rewrite("s1", archive_row_ids=ids[1:], archived_reason="rewind")

    listed = (await storage.list_sessions()).sessions[0]
    got = await storage.get_session("s1")
    assert listed.message_count == 1
    assert got is not None and got.message_count == 1


async def test_a_bad_cursor_is_an_invalid_value(storage: SqliteStorage) -> None:
    with pytest.raises(InvalidValue):
        await storage.list_sessions(cursor="not-a-cursor")
    with pytest.raises(InvalidValue):
        await storage.list_sessions(limit=0)
