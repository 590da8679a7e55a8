"""``/usage`` and ``/status``, busy-blocked commands, and text that is not a command."""

from __future__ import annotations

import pytest

from hermes_core import CommandUsageError, Kernel, Session, SessionBusy

from .helpers import data, reply, run, start_slow_turn


async def test_usage_before_any_turn_is_all_zero(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/usage")
    assert result.output == (
        "Tokens: 0 input, 0 output (0 reasoning), 0 total over 0 model calls\nContext: no model call yet"
    )
    assert data(result)["context_percent"] is None


async def test_usage_after_turns_shows_the_counts(kernel: Kernel, session: Session) -> None:
    await reply(session, "count these four words")
    await reply(session, "[[tokens 5]]")
    usage = session.usage
    assert usage.input > 0 and usage.output > 0 and usage.calls == 2
    result = await run(kernel, session, "/usage")
    first, second = (result.output or "").splitlines()
    assert first == (
        f"Tokens: {usage.input} input, {usage.output} output (0 reasoning), "
        f"{usage.total} total over 2 model calls"
    )
    assert usage.context_used is not None
    percent = round(usage.context_used * 100 / 32768, 1)
    assert second == f"Context: {usage.context_used} of 32,768 tokens used ({percent:.1f}%)"
    info = data(result)
    assert (info["input"], info["output"], info["total"], info["calls"]) == (
        usage.input,
        usage.output,
        usage.input + usage.output,
        2,
    )
    assert info["context_max"] == 32768 and info["context_percent"] == percent


async def test_status_shows_the_session_state(kernel: Kernel, session: Session) -> None:
    await run(kernel, session, "/title Status check")
    result = await run(kernel, session, "/status")
    lines = (result.output or "").splitlines()
    assert lines == [
        f"Session: {session.id}",
        "Title: Status check",
        "Model: mock:echo (provider mock, source: default)",
        f"Workspace: {session.cwd}",
        "Approval profile: default",
        "State: idle, 0 queued prompts",
    ]
    assert data(result)["busy"] is False


async def test_status_follows_model_switches_and_running_turns(kernel: Kernel, session: Session) -> None:
    await run(kernel, session, "/model mock:alt")
    turn = await start_slow_turn(session)
    await session.submit("waiting", owner="t")
    result = await run(kernel, session, "/status")
    assert "Model: mock:alt (provider mock, source: session)" in (result.output or "")
    info = data(result)
    assert (info["busy"], info["running"], info["queued"], info["model"]) == (True, True, 1, "mock:alt")
    assert info["status"] != "idle"
    assert ", busy, 1 queued prompt" in (result.output or "")
    await session.interrupt(discard_queue=True)
    await turn.outcome


@pytest.mark.parametrize("command", ["/model mock:alt", "/model", "/compress", "/branch", "/fork x"])
async def test_busy_blocked_commands_raise_while_a_turn_runs(
    kernel: Kernel, session: Session, command: str
) -> None:
    await reply(session, "one")
    await reply(session, "two")
    turn = await start_slow_turn(session)
    with pytest.raises(SessionBusy):
        await kernel.dispatch_slash(session, command, surface="tui")
    await session.interrupt(discard_queue=True)
    await turn.outcome
    assert kernel.sessions.live == [session]
    assert session.record.model is None
    assert all(r.display_kind != "summary" for r in await session.history())


@pytest.mark.parametrize("command", ["/help", "/status", "/usage", "/title", "/title While busy"])
async def test_other_commands_run_while_a_turn_runs(kernel: Kernel, session: Session, command: str) -> None:
    turn = await start_slow_turn(session)
    result = await kernel.dispatch_slash(session, command, surface="tui")
    assert result is not None and result.output
    await session.interrupt(discard_queue=True)
    await turn.outcome


@pytest.mark.parametrize(
    "text",
    [
        "hello there",
        "",
        "   ",
        "/",
        "/ help",
        "//help",
        "/frobnicate now",
        "/helpme",
        "path/to/file",
        " x /help",
    ],
)
async def test_text_that_is_not_a_registered_command_returns_none(
    kernel: Kernel, session: Session, text: str
) -> None:
    assert await kernel.dispatch_slash(session, text, surface="tui") is None
    assert not session.busy


async def test_commands_are_matched_with_surrounding_whitespace(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "  /title   Spaced out  ")
    assert data(result)["title"] == "Spaced out"


@pytest.mark.parametrize(
    "command", ["/status", "/usage", "/title", "/compress", "/branch", "/stop", "/model"]
)
async def test_session_commands_need_a_session(kernel: Kernel, command: str) -> None:
    with pytest.raises(CommandUsageError):
        await kernel.dispatch_slash(None, command, surface="api")
