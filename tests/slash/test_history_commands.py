"""``/history``, ``/undo`` and ``/retry`` on real sessions with the mock model."""

from __future__ import annotations

import pytest

from hermes_core import CommandUsageError, Kernel, RewindError, Session, SessionBusy

from .helpers import data, reply, run, start_slow_turn


async def test_history_shows_the_projection_briefly(kernel: Kernel, session: Session) -> None:
    assert (await run(kernel, session, "/history")).output == "No messages yet."
    await reply(session, "first question")
    await reply(session, "second " + "word " * 40)
    result = await run(kernel, session, "/history")
    lines = (result.output or "").splitlines()
    assert lines[0] == "You: first question"
    assert lines[1] == "Hermes: You said: first question"
    assert lines[2].startswith("You: second word word") and lines[2].endswith("…")
    assert len(lines[2]) == len("You: ") + 100
    assert len(lines) == 4
    assert data(result)["total"] == 4
    assert [m["row_id"] for m in data(result)["messages"]] == [r.id for r in await session.history()]


async def test_history_count_limits_and_says_what_is_hidden(kernel: Kernel, session: Session) -> None:
    for text in ("one", "two", "three"):
        await reply(session, text)
    result = await run(kernel, session, "/history 2")
    assert (result.output or "").splitlines() == [
        "… 4 earlier messages not shown",
        "You: three",
        "Hermes: You said: three",
    ]
    with pytest.raises(CommandUsageError) as caught:
        await kernel.dispatch_slash(session, "/history zero", surface="tui")
    assert caught.value.usage == "/history [COUNT]"


async def test_undo_archives_the_last_turn(kernel: Kernel, session: Session) -> None:
    await reply(session, "keep this")
    await reply(session, "drop this")
    first_user = (await session.history())[0].id
    result = await run(kernel, session, "/undo")
    assert result.output == "Removed your last message and what followed (2 messages): drop this"
    assert data(result)["survivor_user_row_ids"] == [first_user]
    assert data(result)["archived"] == 2
    assert data(result)["text"] == "drop this"
    assert [r.content for r in await session.history()] == ["keep this", "You said: keep this"]
    stored = await kernel.storage.load_rows(session.id, include_archived=True)
    assert [(r.content, r.archived_reason) for r in stored if not r.active] == [
        ("drop this", "rewind"),
        ("You said: drop this", "rewind"),
    ]
    # The model no longer sees the undone turn (mock:history replies with the user turns it got).
    await run(kernel, session, "/model --once mock:history")
    assert await reply(session, "next") == "Turns: keep this | next"


async def test_undo_may_empty_the_transcript(kernel: Kernel, session: Session) -> None:
    await reply(session, "only turn")
    result = await run(kernel, session, "/undo")
    assert data(result)["survivor_user_row_ids"] == []
    assert await session.history() == []
    with pytest.raises(RewindError) as caught:
        await kernel.dispatch_slash(session, "/undo", surface="tui")
    assert caught.value.code == 4018


async def test_retry_undoes_and_sends_the_text_again(kernel: Kernel, session: Session) -> None:
    await reply(session, "first")
    await reply(session, "second")
    survivors = [(await session.history())[0].id]
    result = await kernel.dispatch_slash(session, "/retry", surface="tui")
    assert result is not None and result.kind == "send"
    assert result.message == "second"
    assert data(result)["survivor_user_row_ids"] == survivors
    assert [r.content for r in await session.history()] == ["first", "You said: first"]
    assert await reply(session, result.message) == "You said: second"
    assert [r.content for r in await session.history()][-2:] == ["second", "You said: second"]


async def test_regenerate_is_an_alias_of_retry(kernel: Kernel, session: Session) -> None:
    await reply(session, "again please")
    result = await kernel.dispatch_slash(session, "/regenerate", surface="api")
    assert result is not None and (result.kind, result.message) == ("send", "again please")


@pytest.mark.parametrize("command", ["/undo", "/retry"])
async def test_undo_and_retry_refuse_while_busy(kernel: Kernel, session: Session, command: str) -> None:
    await reply(session, "earlier")
    turn = await start_slow_turn(session)
    with pytest.raises(SessionBusy):
        await kernel.dispatch_slash(session, command, surface="tui")
    await turn.outcome
    assert len(await session.history()) == 4
