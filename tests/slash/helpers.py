"""Helpers for the slash command tests: run a turn to its end, start a slow one."""

from __future__ import annotations

from typing import Any

from hermes_core import CommandResult, Kernel, Session, TextDelta, Turn, TurnCompleted

SLOW_PROMPT = "[[delay 200]] a b c d"


async def reply(session: Session, text: str) -> str:
    """Run one turn and return its final text (asserting it completed normally)."""
    turn = await session.submit(text, owner="t")
    final = ""
    async for event in turn.events():
        if isinstance(event, TurnCompleted):
            final = event.text
    outcome = await turn.outcome
    assert (outcome.status, outcome.reason) == ("complete", "stop"), outcome
    return final


async def start_slow_turn(session: Session) -> Turn:
    """Submit a slow mock turn and return once its first text delta has streamed."""
    turn = await session.submit(SLOW_PROMPT, owner="t")
    async for event in turn.events():
        if isinstance(event, TextDelta):
            break
    return turn


async def run(kernel: Kernel, session: Session | None, text: str, surface: str = "tui") -> CommandResult:
    """Dispatch a slash command that must exist and return its result."""
    result = await kernel.dispatch_slash(session, text, surface=surface)
    assert result is not None, f"{text!r} was not taken as a command"
    assert result.kind == "exec"
    return result


def data(result: CommandResult) -> dict[str, Any]:
    """Return the structured part of a result (asserting there is one)."""
    assert result.data is not None
    return dict(result.data)
