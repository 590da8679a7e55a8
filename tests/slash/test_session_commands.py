"""``/compress``, ``/title``, ``/branch`` (``/fork``) and ``/stop`` on real sessions with the mock model."""

from __future__ import annotations

import pytest

from hermes_core import CommandNotAvailable, InvalidValue, Kernel, Session

from .helpers import SLOW_PROMPT, data, reply, run, start_slow_turn


async def test_compress_summarises_older_turns_in_place(kernel: Kernel, session: Session) -> None:
    for text in ("alpha one two three", "beta four five", "gamma six"):
        await reply(session, text)
    session_id = session.id
    survivors = [r.id for r in await session.history()][-2:]
    result = await run(kernel, session, "/compress")
    assert (
        result.output
        == "Summarised 4 messages into one summary; the conversation now shows 3 messages (was 6)."
    )
    assert session.id == session_id
    history = await session.history()
    assert [r.display_kind for r in history] == ["summary", None, None]
    assert history[0].id == data(result)["summary_row_id"]
    assert history[0].content == "Summary of 4 messages: alpha one two, beta four five"
    assert [r.id for r in history[1:]] == survivors
    assert kernel.live_session(session_id) is session
    stored = await kernel.storage.load_rows(session.id, include_archived=True)
    assert [r.archived_reason for r in stored if not r.active] == ["compress"] * 4
    assert await reply(session, "delta") == "You said: delta"


async def test_compress_with_a_focus_reports_it(kernel: Kernel, session: Session) -> None:
    await reply(session, "one")
    await reply(session, "two")
    result = await run(kernel, session, "/compress the database schema")
    assert data(result)["focus"] == "the database schema"
    assert data(result)["archived"] == 2


async def test_compress_with_too_little_history_changes_nothing(kernel: Kernel, session: Session) -> None:
    await reply(session, "only turn")
    before = await session.history()
    result = await run(kernel, session, "/compress")
    assert (result.output or "").startswith("Nothing to compress yet")
    assert data(result)["summary_row_id"] is None
    assert await session.history() == before


async def test_title_shows_sets_and_persists(kernel: Kernel, session: Session) -> None:
    empty = await run(kernel, session, "/title")
    assert empty.output == "This session has no title yet; /title TEXT sets one."
    assert data(empty)["title"] is None
    pending = await run(kernel, session, "/title  Refactor the parser ")
    assert pending.output == "Title set to: Refactor the parser (saved with the first message)"
    assert data(pending) == {"title": "Refactor the parser", "pending": True}
    await reply(session, "start working now please")
    assert (await run(kernel, session, "/title")).output == "Title: Refactor the parser"
    record = await kernel.storage.get_session(session.id)
    assert record is not None and record.title == "Refactor the parser"
    renamed = await run(kernel, session, "/title Parser, part two")
    assert renamed.output == "Title set to: Parser, part two"
    record = await kernel.storage.get_session(session.id)
    assert record is not None and record.title == "Parser, part two"


async def test_title_shows_the_derived_title(kernel: Kernel, session: Session) -> None:
    await reply(session, "fix the flaky login test in CI today")
    assert (await run(kernel, session, "/title")).output == "Title: fix the flaky login test in"


async def test_an_invalid_title_raises_and_keeps_the_old_one(kernel: Kernel, session: Session) -> None:
    await run(kernel, session, "/title Good")
    with pytest.raises(InvalidValue):
        await kernel.dispatch_slash(session, "/title " + "x" * 201, surface="tui")
    assert session.info().title == "Good"


@pytest.mark.parametrize("command", ["/branch", "/fork"])
async def test_branch_opens_a_copy_with_the_parent_set(
    kernel: Kernel, session: Session, command: str
) -> None:
    await run(kernel, session, "/title Main line")
    await reply(session, "first message")
    await reply(session, "second message")
    result = await run(kernel, session, command)
    child_id = data(result)["session_id"]
    assert child_id != session.id
    assert result.output == (
        f"Branched into new session {child_id}: 'Main line (branch)' (4 messages copied). "
        "This session is unchanged."
    )
    child = kernel.live_session(child_id)
    assert child is not None
    assert child.record.parent_session_id == session.id
    assert child.info().title == "Main line (branch)"
    assert [r.content for r in await child.history()] == [r.content for r in await session.history()]
    stored = await kernel.storage.get_session(child_id)
    assert stored is not None and stored.parent_session_id == session.id
    assert await reply(child, "only in the branch") == "You said: only in the branch"
    assert len(await session.history()) == 4
    await child.close()


async def test_branch_with_a_title_uses_it(kernel: Kernel, session: Session) -> None:
    await reply(session, "hello")
    result = await run(kernel, session, "/branch Try another approach")
    assert data(result)["title"] == "Try another approach"
    child = kernel.live_session(data(result)["session_id"])
    assert child is not None and child.info().title == "Try another approach"
    await child.close()


async def test_stop_interrupts_the_running_turn(kernel: Kernel, session: Session) -> None:
    turn = await start_slow_turn(session)
    result = await run(kernel, session, "/stop", surface="tui")
    assert result.output == "Stopped the running turn."
    assert data(result) == {"was_running": True, "queued": 0}
    outcome = await turn.outcome
    assert (outcome.status, outcome.reason) == ("interrupted", "interrupted_by_user")
    assert await reply(session, "next") == "You said: next"


async def test_stop_keeps_queued_prompts(kernel: Kernel, session: Session) -> None:
    first = await start_slow_turn(session)
    second = await session.submit("queued one", owner="t")
    result = await run(kernel, session, "/stop", surface="api")
    assert result.output == "Stopped the running turn. 1 queued prompt will still run."
    assert (await first.outcome).status == "interrupted"
    assert (await second.outcome).status == "complete"


async def test_stop_when_idle_says_so(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/stop")
    assert result.output == "Nothing is running."


@pytest.mark.parametrize("surface", ["acp", "cli"])
async def test_stop_is_not_available_on_acp_and_cli(kernel: Kernel, session: Session, surface: str) -> None:
    turn = await session.submit(SLOW_PROMPT.replace("200", "20"), owner="t")
    with pytest.raises(CommandNotAvailable) as caught:
        await kernel.dispatch_slash(session, "/stop", surface=surface)
    assert caught.value.surface == surface
    outcome = await turn.outcome
    assert outcome.status == "complete"
