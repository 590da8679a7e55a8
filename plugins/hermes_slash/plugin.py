"""Register the foundation slash commands (agent-core §11) through ``hermes_slash_commands``.

Cheap to import: each handler is a thin wrapper that imports its implementation module the
first time the command runs. ``/model`` is not here; it belongs to the ``model-switch`` plugin,
and everything below works without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hermes_core import CommandSpec, hookimpl

if TYPE_CHECKING:
    from hermes_core import CommandContext, CommandResult

Handler = Callable[["CommandContext"], Awaitable["CommandResult"]]


def _lazy(module: str, function: str) -> Handler:
    """Return a handler that imports ``hermes_slash.<module>`` when the command first runs.

    :param module: the implementation module inside ``hermes_slash``.
    :param function: the async function in it taking a ``CommandContext``.
    :returns: an async handler for a ``CommandSpec``.
    """

    async def handler(ctx: CommandContext) -> CommandResult:
        implementation = getattr(importlib.import_module(f"hermes_slash.{module}"), function)
        result: CommandResult = await implementation(ctx)
        return result

    handler.__name__ = handler.__qualname__ = function
    handler.__doc__ = f"Run hermes_slash.{module}.{function}."
    return handler


SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name="help",
        summary="List the slash commands, or describe one",
        handler=_lazy("help", "help_command"),
        usage="/help [COMMAND]",
        category="info",
        needs_session=False,
    ),
    CommandSpec(
        name="status",
        summary="Show the session's model, workspace, approval profile, title and state",
        handler=_lazy("reports", "status_command"),
        usage="/status",
        category="info",
    ),
    CommandSpec(
        name="usage",
        summary="Show the session's token usage and how full the context window is",
        handler=_lazy("reports", "usage_command"),
        usage="/usage",
        category="info",
    ),
    CommandSpec(
        name="title",
        summary="Show the session title, or set it",
        handler=_lazy("session_commands", "title_command"),
        usage="/title [TEXT]",
        category="session",
    ),
    CommandSpec(
        name="compress",
        summary="Summarise older turns into one summary to free context (optionally around a focus)",
        handler=_lazy("session_commands", "compress_command"),
        usage="/compress [FOCUS]",
        category="session",
        busy_blocked=True,
    ),
    CommandSpec(
        name="branch",
        summary="Copy this conversation into a new session and leave this one as it is",
        handler=_lazy("session_commands", "branch_command"),
        usage="/branch [TITLE]",
        aliases=("fork",),
        category="session",
        busy_blocked=True,
    ),
    CommandSpec(
        name="stop",
        summary="Interrupt the running turn; queued prompts still run",
        handler=_lazy("session_commands", "stop_command"),
        usage="/stop",
        category="session",
        # §11: ACP busy prompts queue and `hermes run` has one turn, so neither can run /stop mid-turn.
        unavailable_on=frozenset({"acp", "cli"}),
    ),
)


@hookimpl
def hermes_slash_commands() -> tuple[CommandSpec, ...]:
    """Declare the foundation slash commands.

    :returns: their specs.
    """
    return SPECS
