"""Register the built-in slash commands (docs/slash-commands.md#where-commands-are-recognised) through
``hermes_slash_commands``.

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
        # docs/slash-commands.md#where-commands-are-recognised: ACP busy prompts queue and `hermes run` has
        # one turn, so neither can run /stop mid-turn.
        unavailable_on=frozenset({"acp", "cli"}),
    ),
    CommandSpec(
        name="new",
        summary="Start a fresh session; this one is kept and can be resumed",
        handler=_lazy("flow_commands", "new_command"),
        usage="/new",
        aliases=("reset",),
        category="session",
        # docs/slash-commands.md#where-commands-are-recognised: an ACP client owns its sessions (session/new),
        # so the agent cannot start one.
        unavailable_on=frozenset({"acp"}),
    ),
    CommandSpec(
        name="resume",
        summary="List the saved sessions, or resume one by id or title",
        handler=_lazy("resume_command", "resume_command"),
        usage="/resume [ID | TITLE]",
        category="session",
        needs_session=False,
    ),
    CommandSpec(
        name="history",
        summary="Show the conversation so far, one short line per message",
        handler=_lazy("history_commands", "history_command"),
        usage="/history [COUNT]",
        category="session",
    ),
    CommandSpec(
        name="undo",
        summary="Remove your last message and everything after it (kept in the archive)",
        handler=_lazy("history_commands", "undo_command"),
        usage="/undo",
        category="session",
        busy_blocked=True,
    ),
    CommandSpec(
        name="retry",
        summary="Remove your last message and what followed, then send it again",
        handler=_lazy("history_commands", "retry_command"),
        usage="/retry",
        aliases=("regenerate",),
        category="session",
        busy_blocked=True,
    ),
    CommandSpec(
        name="steer",
        summary="Give the running turn extra guidance after its current tool step",
        handler=_lazy("flow_commands", "steer_command"),
        usage="/steer TEXT",
        category="session",
        # docs/slash-commands.md#where-commands-are-recognised: ACP prompts queue and `hermes run` has one
        # turn, so nothing runs to be steered.
        unavailable_on=frozenset({"acp", "cli"}),
    ),
    CommandSpec(
        name="queue",
        summary="Send a prompt that waits until the running turn ends",
        handler=_lazy("flow_commands", "queue_command"),
        usage="/queue TEXT",
        category="session",
        unavailable_on=frozenset({"acp", "cli"}),
    ),
    CommandSpec(
        name="approvals",
        summary="Show the session's approval profile, or set it (off only when named)",
        handler=_lazy("approvals_command", "approvals_command"),
        usage="/approvals [ask_everything | default | accept_edits | off]",
        category="session",
        subcommands=("ask_everything", "default", "accept_edits", "off"),
    ),
    CommandSpec(
        name="tools",
        summary="List the tools the model can use, by toolset",
        handler=_lazy("inventory", "tools_command"),
        usage="/tools",
        category="info",
        needs_session=False,
    ),
    CommandSpec(
        name="plugins",
        summary="List the loaded plugins and whether each one works",
        handler=_lazy("inventory", "plugins_command"),
        usage="/plugins",
        category="info",
        needs_session=False,
    ),
    CommandSpec(
        name="version",
        summary="Show the Hermes version",
        handler=_lazy("inventory", "version_command"),
        usage="/version",
        category="info",
        needs_session=False,
    ),
    CommandSpec(
        name="reload",
        summary="Read the settings file again and apply it",
        handler=_lazy("reload_commands", "reload_command"),
        usage="/reload",
        category="config",
        needs_session=False,
    ),
    CommandSpec(
        name="reload-mcp",
        summary="Re-read the MCP servers from config.toml, reconnect them and show their state",
        handler=_lazy("reload_commands", "reload_mcp_command"),
        usage="/reload-mcp",
        category="config",
        needs_session=False,
    ),
)


@hookimpl
def hermes_slash_commands() -> tuple[CommandSpec, ...]:
    """Declare the built-in slash commands.

    :returns: their specs.
    """
    return SPECS
