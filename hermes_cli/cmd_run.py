"""``hermes run``: one non-interactive turn (docs/reference/core.md#background-tasks-and-one-shot-calls), or a
slash command.

stdout carries only the reply text, streamed as it arrives; tool activity, warnings and errors
go to stderr. The turn answers no questions (``answerable`` is empty).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hermes_cli import event_loop
from hermes_cli.failures import EXIT_FAILURE, EXIT_USAGE, error_line, guarded
from hermes_cli.session_ids import session_id_problem
from hermes_cli.state import get_state

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hermes_core.content import Part
    from hermes_core.events import TurnOutcome
    from hermes_core.kernel import Kernel
    from hermes_core.records import CommandResult
    from hermes_core.session.live import Session

SOURCE = "cli"
OWNER = "cli"
PROFILE = "accept_edits"
TITLE_WAIT_S = 10.0  # at most this long after the reply for the model-written title


class _Output:
    """Writes reply text to stdout and remembers whether the last line was ended."""

    def __init__(self) -> None:
        self.open_line = False

    def text(self, text: str) -> None:
        if not text:
            return
        sys.stdout.write(text)
        sys.stdout.flush()
        self.open_line = not text.endswith("\n")

    def finish(self) -> None:
        if self.open_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.open_line = False


def _note(message: str) -> None:
    click.echo(message, err=True)


def _describe_failure(outcome: TurnOutcome) -> str:
    detail = f": {outcome.message}" if outcome.message else ""
    kind = f" ({outcome.error_kind})" if outcome.error_kind else ""
    if outcome.reason == "iteration_cap" and outcome.cap:
        return f"turn stopped at the tool-round limit ({outcome.cap[0]}/{outcome.cap[1]}){detail}"
    if outcome.status == "complete":
        what = {"length": "the reply was cut short (output limit)", "refusal": "the model refused"}
        return what.get(outcome.reason, f"turn ended: {outcome.reason}") + detail
    return f"turn {outcome.status}: {outcome.reason}{kind}{detail}"


async def _run_turn(session: Session, prompt: str | Sequence[Part], out: _Output) -> int:
    from hermes_core.events import Retrying, TextDelta, ToolAnnounced, ToolCompleted, TurnCompleted

    turn = await session.submit(prompt, owner=OWNER, answerable=frozenset())
    async for event in turn.events():
        if isinstance(event, TextDelta):
            out.text(event.text)
        elif isinstance(event, ToolAnnounced):
            out.finish()
            _note(f"→ {event.title or event.name}")
        elif isinstance(event, ToolCompleted):
            first = event.result_text.strip().splitlines()[0] if event.result_text.strip() else ""
            mark = "✗" if event.is_error else "✓"
            _note(f"{mark} {event.name}{': ' + first[:200] if first else ''}")
        elif isinstance(event, Retrying):
            _note(f"retrying ({event.kind}) in {event.wait_s:.1f}s, attempt {event.attempt}")
        elif isinstance(event, TurnCompleted):
            for warning in event.warnings:
                _note(f"Warning: {warning}")
    out.finish()
    outcome = await turn.outcome
    if outcome.status == "complete" and outcome.reason == "stop":
        return 0
    error_line(_describe_failure(outcome))
    return EXIT_FAILURE


async def _show_command_result(kernel: Kernel, session: Session, result: CommandResult, out: _Output) -> int:
    parts = (result.data or {}).get("parts") if result.kind == "send" else None
    if parts:  # /retry of a prompt with images: send the stored parts, images included
        return await _run_turn(session, list(parts), out)
    if result.kind == "send" and result.message:
        return await _run_turn(session, result.message, out)
    if result.kind == "alias" and result.target:
        follow = await kernel.dispatch_slash(session, result.target, surface=SOURCE)
        if follow is not None and follow.kind != "alias":
            return await _show_command_result(kernel, session, follow, out)
        return await _run_turn(session, result.target, out)
    text = result.output if result.output is not None else result.message
    if text:
        out.text(text)
    out.finish()
    if (result.data or {}).get("scope") == "once":
        # The next turn of this process never comes: `hermes run` ends after the command.
        _note("Warning: --once only lasts for the next turn in this process; use `hermes run --model`")
    return 0


async def _await_title(session: Session) -> None:
    """Let the title the model is writing for a new session land before the process ends.

    The kernel asks for it in the background after the first turn (task ``hermes-title-<id>``);
    leaving without it would pay for the request and throw the answer away.
    """
    import asyncio

    name = f"hermes-title-{session.id}"
    pending = [task for task in asyncio.all_tasks() if task.get_name() == name]
    if pending:
        await asyncio.wait(pending, timeout=TITLE_WAIT_S)


async def _run(kernel: Kernel, prompt: str, session_id: str | None) -> int:
    async with kernel.running():
        session = await kernel.open_session(
            session_id, source=SOURCE, owner=OWNER, cwd=Path.cwd(), profile=PROFILE
        )
        out = _Output()
        try:
            result = await kernel.dispatch_slash(session, prompt, surface=SOURCE)
            if result is not None:
                code = await _show_command_result(kernel, session, result, out)
            else:
                code = await _run_turn(session, prompt, out)
            out.finish()
            await _await_title(session)
            return code
        finally:
            out.finish()
            await session.close()


@click.command("run")
@click.option(
    "--model", "model", metavar="PROVIDER:MODEL", help="The model for this run (overrides HERMES_MODEL)."
)
@click.option(
    "--session", "session_id", metavar="ID", help="Continue this session (an unknown id creates it)."
)
@click.argument("prompt")
@click.pass_context
def run_command(ctx: click.Context, model: str | None, session_id: str | None, prompt: str) -> None:
    """Run one non-interactive turn in the current directory and print the reply.

    A PROMPT that is a known slash command (e.g. "/help") is run as that command.
    """
    if session_id is not None:
        problem = session_id_problem(session_id)
        if problem:
            error_line(problem)
            ctx.exit(EXIT_USAGE)
    state = get_state(ctx)

    def body() -> int:
        from hermes_cli.scenario_check import check_settings
        from hermes_cli.settings_loader import apply_model_flag

        kernel = state.kernel  # loads the plugins, whose variables the settings then read
        raw = apply_model_flag(state.store.load(), model)
        check_settings(raw)
        kernel.configure(raw)
        return event_loop.run(_run(kernel, prompt, session_id))

    code: Any = guarded(body)
    ctx.exit(int(code))
