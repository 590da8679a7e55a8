"""Sessions and storage through the kernel (docs/reference/core.md#sessions-and-storage), on SQLite files and
in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    InvalidValue,
    Kernel,
    NewRow,
    RewindError,
    SeedMessage,
    SessionInUse,
    SessionNotFound,
    StorageError,
)
from hermes_core.testing import make_kernel
from tests.core.conftest import collect


def sqlite_kernel(tmp_path: Path, **settings: Any) -> Kernel:
    return make_kernel(
        entry_points=["mock", "tools", "sqlite"],
        settings={"storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}, **settings},
    )


@pytest.fixture(params=["sqlite", "memory"])
async def k(request: Any, tmp_path: Path) -> AsyncIterator[Kernel]:
    kernel = (
        sqlite_kernel(tmp_path) if request.param == "sqlite" else make_kernel(entry_points=["mock", "tools"])
    )
    async with kernel.running():
        yield kernel


async def turn(session: Any, text: str) -> list[Any]:
    return await collect(await session.submit(text, owner="t"))


async def test_sessions_are_created_lazily(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    assert await k.storage.get_session(session.id) is None
    assert session.info().persisted is False
    await turn(session, "first")
    record = await k.storage.get_session(session.id)
    assert record is not None and record.source == "tui" and record.cwd == str(workspace.resolve())


async def test_create_cwd_makes_a_new_sessions_folder(k: Kernel, tmp_path: Path) -> None:
    folder = tmp_path / "made" / "for-me"
    session = await k.open_session("fresh", source="api", owner="t", cwd=folder, create_cwd=True)
    assert folder.is_dir() and session.cwd == folder.resolve()


async def test_new_folders_resolve_through_a_linked_parent_even_when_it_moves(
    k: Kernel, tmp_path: Path
) -> None:
    """New sessions' folders under one parent resolve like the parent does, also after the
    parent was swapped for another folder (the resolved parent is remembered per process)."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    link = tmp_path / "workspaces"
    link.symlink_to(first)
    one = await k.open_session("one", source="api", owner="t", cwd=link / "one", create_cwd=True)
    two = await k.open_session("two", source="api", owner="t", cwd=link / "two", create_cwd=True)
    assert (one.cwd, two.cwd) == (first.resolve() / "one", first.resolve() / "two")
    link.unlink()
    link.symlink_to(second)
    three = await k.open_session("three", source="api", owner="t", cwd=link / "three", create_cwd=True)
    assert three.cwd == second.resolve() / "three" and three.cwd.is_dir()
    again = await k.open_session("again", source="api", owner="t", cwd=link / "three", create_cwd=True)
    assert again.cwd == three.cwd  # a folder that exists already is checked the full way


async def test_a_new_id_opens_without_reading_storage(
    k: Kernel, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``new=True``: the caller made the id (an API chat's 64 random bits), so opening takes
    the lease and reads nothing; the session is stored at its first row like any new one."""
    reads: list[str] = []
    real = k.storage.get_session

    async def counted(session_id: str) -> Any:
        reads.append(session_id)
        return await real(session_id)

    monkeypatch.setattr(k.storage, "get_session", counted)
    session = await k.open_session("api-0123456789abcdef", source="api", owner="t", cwd=workspace, new=True)
    assert reads == [] and session.info().persisted is False
    await turn(session, "first")
    await session.close()
    monkeypatch.setattr(k.storage, "get_session", real)
    record = await k.storage.get_session("api-0123456789abcdef")
    assert record is not None and record.source == "api"
    again = await k.open_session("api-0123456789abcdef", source="api", owner="t")
    assert [r.role for r in again.rows] == ["user", "assistant"]


async def test_a_new_id_takes_its_lease_with_its_first_write(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``new=True`` session writes nothing as it opens: its first write stores the session, its
    first row and its writer lease in one transaction (no ``acquire_lease`` of its own), and
    another process is refused from then on."""
    async with sqlite_kernel(tmp_path).running() as first, sqlite_kernel(tmp_path).running() as second:
        asked: list[str] = []
        real = first.storage.acquire_lease

        async def counted(session_id: str, *args: Any, **kwargs: Any) -> str | None:
            asked.append(session_id)
            return await real(session_id, *args, **kwargs)

        monkeypatch.setattr(first.storage, "acquire_lease", counted)
        session = await first.open_session(
            "api-00000000000000ab", source="api", owner="t", cwd=workspace, new=True
        )
        assert session.state.lease_pending and not session.state.lease_started
        again = await second.open_session("api-00000000000000ab", source="api", owner="t", cwd=workspace)
        await again.close()  # nothing was stored or leased: the id was free until the first write
        await turn(session, "hello")
        assert asked == [] and not session.state.lease_pending
        with pytest.raises(SessionInUse):
            await second.open_session("api-00000000000000ab", source="api", owner="t", cwd=workspace)
        await first.sessions.renew_once()  # the lease the first write took renews
        held = await second.storage.acquire_lease("api-00000000000000ab", second.lease_owner, 30.0)
        assert held == first.lease_owner
        await session.close()
        reopened = await second.open_session("api-00000000000000ab", source="api", owner="t", cwd=workspace)
        assert [r.role for r in reopened.rows] == ["user", "assistant"]


async def test_a_new_ids_first_write_fails_on_a_lease_held_elsewhere(tmp_path: Path, workspace: Path) -> None:
    """Should another live process hold the lease of an id made here (it cannot know it, but say
    it does), the first write fails with a storage error, stores nothing, and the session counts
    as one whose lease could not be taken."""
    async with sqlite_kernel(tmp_path).running() as first, sqlite_kernel(tmp_path).running() as second:
        session = await first.open_session(
            "api-00000000000000ac", source="api", owner="t", cwd=workspace, new=True
        )
        assert await second.storage.acquire_lease("api-00000000000000ac", second.lease_owner, 30.0) is None
        with pytest.raises(StorageError, match="held by"):
            await session.append_rows([NewRow(role="user", content="hi")])
        assert session.state.lease_failed  # as a lease that cannot be taken: nothing more is written
        with pytest.raises(StorageError, match="held by"):
            await session.lease_held()
        assert await second.storage.get_session("api-00000000000000ac") is None


async def test_a_new_id_revealed_early_holds_its_lease_before_its_first_write_and_gives_it_back(
    tmp_path: Path, workspace: Path
) -> None:
    """A ``new=True`` session whose id must be revealed before its first write (a stream's head
    leaving early) takes its lease on its own: ``take_lease_now()`` returns once it is ours
    (another process is then refused), and closing the session before it wrote anything gives
    the lease back (the id is free, no session is stored)."""
    async with sqlite_kernel(tmp_path).running() as first, sqlite_kernel(tmp_path).running() as second:
        session = await first.open_session(
            "api-00000000000000aa", source="api", owner="t", cwd=workspace, new=True
        )
        await session.take_lease_now()
        with pytest.raises(SessionInUse):
            await second.open_session("api-00000000000000aa", source="api", owner="t", cwd=workspace)
        await first.sessions.renew_once()  # a held lease renews; a session not stored yet is fine
        await session.close()
        assert await second.storage.get_session("api-00000000000000aa") is None
        again = await second.open_session("api-00000000000000aa", source="api", owner="t", cwd=workspace)
        await turn(again, "hello")
        assert [r.role for r in again.rows] == ["user", "assistant"]


async def test_create_cwd_that_cannot_be_made_fails_cleanly(k: Kernel, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(InvalidValue) as caught:
        await k.open_session("blocked", source="api", owner="t", cwd=blocker / "sub", create_cwd=True)
    assert caught.value.field == "cwd"
    # Nothing half-done: the lease is released and the id can be opened elsewhere at once.
    assert await k.storage.get_session("blocked") is None
    session = await k.open_session("blocked", source="api", owner="t", cwd=tmp_path)
    assert session.cwd == tmp_path.resolve()


async def test_minted_ids_follow_the_grammar(k: Kernel, workspace: Path) -> None:
    import re

    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", session.id)


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "x" * 257, "sp ace", "é"])
async def test_bad_client_ids_are_refused(k: Kernel, workspace: Path, bad: str) -> None:
    with pytest.raises(InvalidValue):
        await k.open_session(bad, source="api", owner="t", cwd=workspace)


async def test_client_chosen_id_creates_then_reopens(k: Kernel, workspace: Path) -> None:
    session = await k.open_session("my-chat:1", source="api", owner="t", cwd=workspace)
    await turn(session, "hello")
    await session.close()
    again = await k.open_session("my-chat:1", source="api", owner="t", cwd=workspace)
    assert [r.content for r in await again.history()] == ["hello", "You said: hello"]


async def test_resume_by_id_then_by_title(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await session.set_title("Parser work")
    await turn(session, "hi")
    sid = session.id
    await session.close()
    assert (await k.sessions.resume(sid, owner="t")).id == sid
    await k.live_session(sid).close()  # type: ignore[union-attr]
    assert (await k.sessions.resume("Parser work", owner="t")).id == sid
    with pytest.raises(SessionNotFound):
        await k.sessions.resume("nothing like this", owner="t")


async def test_listing_newest_first_with_paging(k: Kernel, workspace: Path) -> None:
    ids = []
    for i in range(5):
        s = await k.open_session(source="tui", owner="t", cwd=workspace)
        await turn(s, f"msg {i}")
        ids.append(s.id)
        await s.close()
    page = await k.sessions.list(limit=2)
    assert [s.id for s in page.sessions] == ids[::-1][:2]
    assert page.next_cursor
    rest = await k.sessions.list(limit=10, cursor=page.next_cursor)
    assert [s.id for s in rest.sessions] == ids[::-1][2:]
    assert page.sessions[0].message_count == 2


async def test_rewind_soft_archives_and_survivors_keep_ids(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    for text in ("one", "two", "three"):
        await turn(session, text)
    users = [r for r in await session.history() if r.role == "user"]
    result = await session.rewind(before_row_id=users[1].id, allow_empty=False)
    assert result.survivor_user_row_ids == [users[0].id]
    assert result.archived == 4
    visible = await session.history()
    assert [r.content for r in visible] == ["one", "You said: one"]
    archived = [r for r in await session.history(include_archived=True) if not r.active]
    assert [r.archived_reason for r in archived] == ["rewind"] * 4
    # the next turn continues from the survivors
    events = await turn(session, "four")
    assert events[-1].text == "You said: four"


async def test_rewind_refusals_write_nothing(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await turn(session, "one")
    await turn(session, "two")
    users = [r for r in await session.history() if r.role == "user"]
    with pytest.raises(RewindError) as bad:
        await session.rewind(before_row_id=999999, allow_empty=False)
    assert bad.value.code == 4018 and bad.value.data["user_turn_count"] == 2
    with pytest.raises(RewindError) as empty:
        await session.rewind(before_row_id=users[0].id, allow_empty=False)
    assert empty.value.code == 4028
    assistant = next(r for r in await session.history() if r.role == "assistant")
    with pytest.raises(RewindError) as not_user:
        await session.rewind(before_row_id=assistant.id, allow_empty=False)
    assert not_user.value.code == 4018
    assert len(await session.history()) == 4
    running = await session.submit("[[delay 50]] a b c", owner="t")
    with pytest.raises(RewindError) as busy:
        await session.rewind(before_row_id=users[1].id, allow_empty=False)
    assert busy.value.code == 4009
    await running.outcome
    done = await session.rewind(before_row_id=users[0].id, allow_empty=True)
    assert done.survivor_user_row_ids == [] and await session.history() == []


async def test_switch_model_session_scope_persists_with_a_hidden_marker(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await turn(session, "one")
    result = await session.switch_model("mock:alt")
    assert result.ref == "mock:alt" and result.previous == "mock:echo" and result.marker_row_id
    events = await turn(session, "two")
    assert events[-1].text == "alt: You said: two"
    rows = await k.storage.load_rows(session.id)
    assert any(r.display_kind == "model_switch" for r in rows)
    assert all(r.display_kind != "model_switch" for r in await session.history())
    record = await k.storage.get_session(session.id)
    assert record is not None and record.model == "mock:alt"


async def test_switch_model_once_and_unknown(k: Kernel, workspace: Path) -> None:
    from hermes_core import ModelNotFound

    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await session.switch_model("mock:alt", scope="once")
    assert (await turn(session, "a"))[-1].text.startswith("alt: ")
    assert (await turn(session, "b"))[-1].text == "You said: b"
    with pytest.raises(ModelNotFound):
        await session.switch_model("mock:nope")
    assert session.info().model == "mock:echo"


async def test_compress_in_place_keeps_ids(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    for text in ("alpha beta gamma delta", "second turn here please", "third one"):
        await turn(session, text)
    last_user = [r for r in await session.history() if r.role == "user"][-1]
    result = await session.compress()
    assert result.summary == "Summary of 4 messages: alpha beta gamma, second turn here"
    history = await session.history()
    assert history[0].display_kind == "summary"
    assert [r.id for r in history[1:]] == [last_user.id, history[2].id]
    archived = [r for r in await session.history(include_archived=True) if not r.active]
    assert {r.archived_reason for r in archived} == {"compress"} and len(archived) == 4
    events = await turn(session, "after")
    assert events[-1].outcome.reason == "stop"


async def test_branch_copies_rows_with_parent_and_title(k: Kernel, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await session.set_title("Main")
    await turn(session, 'read [[tool read_file {"path": "a.txt"}]]')
    await turn(session, "second")
    child = await session.branch(owner="t")
    assert child.id != session.id
    info = child.info()
    assert info.parent_session_id == session.id and info.title == "Main (branch)"
    parent_rows = await session.history()
    child_rows = await child.history()
    assert [(r.role, r.content) for r in child_rows] == [(r.role, r.content) for r in parent_rows]
    assert not set(r.id for r in child_rows) & set(r.id for r in parent_rows)
    stored = await k.storage.get_session(child.id)
    assert stored is not None  # stored at once
    events = await turn(child, "in the branch")
    assert events[-1].outcome.reason == "stop"
    partial = await session.branch(owner="t", count=2, title="Short")
    assert [r.content for r in await partial.history()] == [parent_rows[0].content, parent_rows[1].content]


async def test_reconcile_keeps_prefix_archives_divergent_tail(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="api", owner="t", cwd=workspace)
    await turn(session, "one")
    await turn(session, "two")
    body = [
        SeedMessage("user", "one"),
        SeedMessage("assistant", "You said:   one"),
        SeedMessage("user", "edited two"),
    ]
    result = await session.reconcile(body)
    assert (result.kept, result.archived, result.appended) == (2, 2, 1)
    assert [r.content for r in await session.history()] == ["one", "You said: one", "edited two"]
    archived = [r for r in await session.history(include_archived=True) if not r.active]
    assert {r.archived_reason for r in archived} == {"reconcile"}


async def test_a_queued_prompt_is_reconciled_when_it_reaches_the_head(k: Kernel, workspace: Path) -> None:
    # Two API conversations that opened with the same words land in one derived session; the one
    # that arrives while the other's turn runs must still see only its own transcript.
    session = await k.open_session(source="api", owner="t", cwd=workspace, model="mock:history")
    first = await session.submit("[[delay 20]] good morning", owner="t", reconcile=[])
    second = await session.submit("good morning", owner="t", reconcile=[])
    assert second.position == 1
    e1, e2 = await collect(first), await collect(second)
    assert e1[-1].text == "Turns: good morning"
    assert e2[-1].text == "Turns: good morning"  # not "good morning | good morning"
    assert [r.content for r in await session.history()] == ["good morning", "Turns: good morning"]
    archived = [r for r in await session.history(include_archived=True) if not r.active]
    assert {r.archived_reason for r in archived} == {"reconcile"} and len(archived) == 2


async def test_seeded_session_is_stored_at_once(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(
        source="tui",
        owner="t",
        cwd=workspace,
        seed=[SeedMessage("user", "hi"), SeedMessage("assistant", "hello")],
    )
    assert await k.storage.get_session(session.id) is not None
    events = await turn(session, "again")
    assert events[-1].outcome.reason == "stop"


async def test_workspace_must_be_an_existing_absolute_directory(k: Kernel, workspace: Path) -> None:
    with pytest.raises(InvalidValue):
        await k.open_session(source="tui", owner="t", cwd=Path("relative"))
    with pytest.raises(InvalidValue):
        await k.open_session(source="tui", owner="t", cwd=workspace / "missing")
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    with pytest.raises(InvalidValue):
        await session.set_cwd(workspace / "missing")


async def test_restart_keeps_everything(tmp_path: Path, workspace: Path) -> None:
    first = sqlite_kernel(tmp_path)
    async with first.running():
        session = await first.open_session(source="tui", owner="t", cwd=workspace, profile="ask_everything")
        await turn(session, "one [[tokens 3]]")
        await session.switch_model("mock:alt")
        await session.set_title("Kept")
        sid = session.id
        usage = session.info().usage
    second = sqlite_kernel(tmp_path)
    async with second.running():
        again = await second.sessions.resume(sid, owner="t")
        info = again.info()
        assert (info.model, info.profile, info.title, info.cwd) == (
            "mock:alt",
            "ask_everything",
            "Kept",
            str(workspace.resolve()),
        )
        assert info.usage.output == usage.output == 3
        assert [r.content for r in await again.history()] == ["one [[tokens 3]]", "t0 t1 t2"]


async def test_lease_blocks_a_second_kernel(tmp_path: Path, workspace: Path) -> None:
    a = sqlite_kernel(tmp_path)
    b = sqlite_kernel(tmp_path)
    async with a.running(), b.running():
        session = await a.open_session(source="tui", owner="t", cwd=workspace)
        await turn(session, "hi")
        with pytest.raises(SessionInUse) as err:
            await b.sessions.resume(session.id, owner="t")
        assert err.value.owner == a.lease_owner
        # reads never need the lease
        stored = await b.sessions.stored(session.id)
        assert len(stored.rows) == 2
        await session.close()
        taken = await b.sessions.resume(session.id, owner="t")
        assert taken.id == session.id


async def test_branch_of_unknown_row_is_invalid(k: Kernel, workspace: Path) -> None:
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await turn(session, "x")
    with pytest.raises(InvalidValue):
        await session.branch(owner="t", up_to_row_id=123456)
    with pytest.raises(InvalidValue):
        await session.branch(owner="t", count=1, up_to_row_id=1)
    assert dataclasses.is_dataclass(session.info())


async def test_auto_compaction_runs_before_a_turn_over_the_threshold(workspace: Path) -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"compression": {"auto_threshold": 0.0005}})
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        await turn(session, "first words here [[tokens 30]]")
        assert not any(r.display_kind == "summary" for r in session.rows)
        events = await turn(session, "second")
        assert events[-1].outcome.reason == "stop"
        history = await session.history()
        assert history[0].display_kind == "summary"
        assert history[0].content.startswith("Summary of 2 messages: first words here")
        assert [r.content for r in history[1:]] == ["second", "You said: second"]


async def test_lease_of_a_dead_or_recycled_pid_is_taken_over(k: Kernel, workspace: Path) -> None:
    """A holder on this host whose process died, or whose pid now belongs to a newer process, loses
    its lease at once; a live holder keeps it; a holder on another host waits for expiry."""
    import os
    import socket
    import subprocess
    import sys

    from hermes_core.lease_owner import pid_namespace, process_start

    host = socket.gethostname()
    ns = pid_namespace() or "-"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = process_start(live.pid)
        mine = process_start(os.getpid())
        cases = [
            (f"{host}:{dead.pid}:1:{ns}:aa", True),
            (f"{host}:{dead.pid}:aa", True),  # the older form without a start time
            (f"{host}:{live.pid}:{start}:{ns}:bb", False),
            (f"other-{host}:{dead.pid}:1:{ns}:cc", False),
            (f"{host}:{os.getpid()}:{mine}:{ns}:ee", False),  # another kernel of this process
        ]
        if start is not None and mine is not None:  # only where start times can be read (Linux)
            cases.append((f"{host}:{live.pid}:{int(start) - 1}:{ns}:dd", True))
            # An earlier process that had this very pid (an agent that is pid 1 in its container).
            cases.append((f"{host}:{os.getpid()}:{int(mine) - 1}:{ns}:ff", True))
        if ns != "-":  # a holder in another pid namespace (container) is never judged by pid
            cases.append((f"{host}:{dead.pid}:1:{int(ns) + 1}:gg", False))
        for index, (holder, taken) in enumerate(cases):
            sid = f"lease-case-{index}"
            assert await k.storage.acquire_lease(sid, holder, 30) is None
            if taken:
                session = await k.open_session(sid, source="tui", owner="t", cwd=workspace)
                await turn(session, "mine now")
                assert await k.storage.acquire_lease(sid, holder, 30) == k.lease_owner
            else:
                with pytest.raises(SessionInUse) as err:
                    await k.open_session(sid, source="tui", owner="t", cwd=workspace)
                assert err.value.owner == holder
    finally:
        live.kill()
        live.wait()


async def test_lost_or_failing_lease_renewal_is_reported_as_a_session_problem(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside any turn, a renewal that fails or finds the lease taken emits ``SessionProblem``."""
    import asyncio

    from hermes_core import SessionProblem
    from hermes_core.session import table as table_module

    monkeypatch.setattr(table_module, "LEASE_RENEW_S", 0.05)
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        await turn(session, "hi")
        events = session.subscribe()
        # Another process takes the lease over (as it would after judging us dead).
        me = kernel.lease_owner
        assert await kernel.storage.acquire_lease(session.id, "elsewhere:1:x", 30, take_over=me) is None

        async def next_problem() -> SessionProblem:
            async for event in events:
                if isinstance(event, SessionProblem):
                    return event
            raise AssertionError("the bus ended")

        problem = await asyncio.wait_for(next_problem(), 10)
        assert problem.code == "lease_lost" and problem.turn_id is None
        assert "another Hermes process" in problem.message

        async def broken(*args: Any, **kw: Any) -> bool:
            raise OSError("disk I/O error")

        monkeypatch.setattr(kernel.storage, "renew_lease", broken)
        problem = await asyncio.wait_for(next_problem(), 10)
        assert problem.code == "storage" and "disk I/O error" in problem.message
        events.close()


async def test_listed_and_read_sessions_carry_a_preview(k: Kernel, workspace: Path) -> None:
    """The first user message (as history shows it) is the session's preview, in both backends."""
    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await turn(session, "first " + "x" * 300)
    await turn(session, "second")
    (listed,) = (await k.sessions.list()).sessions
    assert listed.preview == ("first " + "x" * 300)[:200]
    stored = await k.storage.get_session(session.id)
    assert stored is not None and stored.preview == listed.preview


async def test_a_failed_background_settings_write_is_a_session_problem(
    k: Kernel, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving ``session.extra`` happens in the background; its failure reaches the session's bus."""
    import asyncio

    from hermes_core import SessionProblem

    session = await k.open_session(source="tui", owner="t", cwd=workspace)
    await turn(session, "persist me")
    events = session.subscribe()

    async def broken(*args: Any, **kw: Any) -> None:
        raise OSError("database or disk is full")

    monkeypatch.setattr(k.storage, "update_session", broken)
    session.extra["tui.verbose"] = "off"

    async def first_problem() -> SessionProblem:
        async for event in events:
            if isinstance(event, SessionProblem):
                return event
        raise AssertionError("the bus ended")

    problem = await asyncio.wait_for(first_problem(), 10)
    assert problem.code == "storage" and "disk is full" in problem.message
    events.close()
