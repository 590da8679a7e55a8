"""Register ``/model`` (docs/reference/core.md#branch-compress-titles-model-switch,
docs/slash-commands.md#where-commands-are-recognised) through the ``hermes_slash_commands`` hook.

Cheap to import: the command's implementation lives in :mod:`hermes_model_switch.command`,
imported the first time ``/model`` runs. Disabling this plugin removes ``/model`` and nothing
else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hermes_core import CommandSpec, hookimpl

if TYPE_CHECKING:
    from hermes_core import CommandContext, CommandResult

USAGE = "/model [--once | --global] [PROVIDER:MODEL]"


async def model_command(ctx: CommandContext) -> CommandResult:
    """Run ``/model`` by handing over to the implementation module.

    :param ctx: the dispatch context (kernel, session, arguments, surface).
    :returns: what :func:`hermes_model_switch.command.run` returns.
    """
    implementation = importlib.import_module("hermes_model_switch.command")
    result: CommandResult = await implementation.run(ctx, USAGE)
    return result


SPEC = CommandSpec(
    name="model",
    summary="Show the current model and the choices, or switch to another model",
    handler=model_command,
    usage=USAGE,
    category="model",
    # The core would let a switch land from the next turn, but
    # /model is busy-blocked: it answers SessionBusy while a turn runs, on every surface alike
    # (docs/slash-commands.md#where-commands-are-recognised).
    busy_blocked=True,
)


@hookimpl
def hermes_slash_commands() -> CommandSpec:
    """Declare ``/model``.

    :returns: its spec.
    """
    return SPEC
