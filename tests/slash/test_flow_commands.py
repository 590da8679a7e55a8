"""``/new``, ``/steer`` and ``/queue``, and which surfaces may run them
(docs/slash-commands.md#where-commands-are-recognised)."""

from __future__ import annotations

import pytest

from hermes_core import CommandNotAvailable, CommandUsageError, Kernel, Session, TurnCompleted

from .helpers import SLOW_PROMPT, data, reply, run, start_slow_turn


async def test_new_asks_the_transport_for_a_fresh_session(kernel: Kernel, session: Session) -> None:
    await reply(session, "hello")
    result = await run(kernel, session, "/new")
    assert result.output == f"Starting a new session; {session.id} is kept and can be resumed."
    assert data(result) == {
        "action": "new_session",
        "previous_session_id": session.id,
        "cwd": session.info().cwd,
        "profile": session.profile,
        "model": "mock:echo",
    }
    # The old session is untouched and still live.
    assert kernel.live_session(session.id) is session
    assert len(await session.history()) == 2


async def test_new_on_the_cli_explains_how_to_start_one(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/reset", surface="cli")
    assert data(result)["action"] == "new_session"
    assert "Leave out --session" in (result.output or "")


async def test_steer_reaches_the_running_turn(kernel: Kernel, session: Session) -> None:
    turn = await start_slow_turn(session)
    result = await run(kernel, session, "/steer  prefer the short version ", surface="tui")
    assert result.output == "Guidance noted; the model gets it after its current tool step."
    assert data(result) == {"status": "accepted"}
    completed = [e async for e in turn.events() if isinstance(e, TurnCompleted)]
    # No tool step followed, so the guidance comes back undelivered rather than lost.
    assert completed[-1].pending_steer == "prefer the short version"


async def test_steer_while_idle_becomes_a_prompt(kernel: Kernel, session: Session) -> None:
    result = await kernel.dispatch_slash(session, "/steer try again", surface="tui")
    assert result is not None and (result.kind, result.message) == ("send", "try again")
    assert data(result) == {"status": "idle"}
    assert result.output == "Nothing is running; sending it as a prompt instead."


async def test_queue_returns_a_prompt_that_waits_behind_the_turn(kernel: Kernel, session: Session) -> None:
    first = await start_slow_turn(session)
    result = await kernel.dispatch_slash(session, "/queue then summarise", surface="tui")
    assert result is not None and (result.kind, result.message) == ("send", "then summarise")
    assert data(result) == {"busy": True, "queued": True}
    # The transport submits it; the core queues it behind the running turn.
    queued = await session.submit(result.message or "", owner="t")
    assert queued.position == 1
    assert (await first.outcome).status == "complete"
    assert (await queued.outcome).status == "complete"
    assert [r.content for r in await session.history()][-1] == "You said: then summarise"


async def test_queue_when_idle_sends_at_once(kernel: Kernel, session: Session) -> None:
    result = await kernel.dispatch_slash(session, "/queue now", surface="embed")
    assert result is not None and result.kind == "send"
    assert data(result) == {"busy": False, "queued": False}


@pytest.mark.parametrize("command", ["/steer", "/queue"])
async def test_steer_and_queue_need_text(kernel: Kernel, session: Session, command: str) -> None:
    with pytest.raises(CommandUsageError) as caught:
        await kernel.dispatch_slash(session, command, surface="tui")
    assert caught.value.usage == f"{command} TEXT"


UNAVAILABLE = [
    ("acp", "/new"),
    ("acp", "/reset"),
    ("acp", "/steer go left"),
    ("acp", "/queue later"),
    ("acp", "/stop"),
    ("cli", "/steer go left"),
    ("cli", "/queue later"),
    ("cli", "/stop"),
]


@pytest.mark.parametrize(("surface", "text"), UNAVAILABLE)
async def test_commands_a_surface_cannot_honour(
    kernel: Kernel, session: Session, surface: str, text: str
) -> None:
    turn = await session.submit(SLOW_PROMPT.replace("200", "20"), owner="t")
    with pytest.raises(CommandNotAvailable) as caught:
        await kernel.dispatch_slash(session, text, surface=surface)
    assert str(caught.value).endswith(f"is not available here ({surface})")
    outcome = await turn.outcome
    assert outcome.status == "complete"
    assert session.info().queued == 0


async def test_help_on_acp_marks_what_it_cannot_run(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/help", surface="acp")
    unavailable = {c["name"] for c in data(result)["commands"] if not c["available"]}
    assert unavailable == {"new", "steer", "queue", "stop"}
    on_cli = await run(kernel, session, "/help", surface="cli")
    assert {c["name"] for c in data(on_cli)["commands"] if not c["available"]} == {"steer", "queue", "stop"}
