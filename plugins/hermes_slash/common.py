"""Small helpers shared by the slash command implementations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import CommandUsageError

if TYPE_CHECKING:
    from hermes_core import CommandContext, CommandSpec, Session


def session_of(ctx: CommandContext) -> Session:
    """Return the context's session; the kernel checks this first, the check keeps types honest.

    :param ctx: the dispatch context.
    :returns: the session the command runs on.
    :raises CommandUsageError: when there is none.
    """
    if ctx.session is None:
        raise CommandUsageError(f"/{ctx.name}", f"/{ctx.name} needs a session")
    return ctx.session


def plural(count: int, word: str) -> str:
    """Return ``"1 message"`` / ``"3 messages"``.

    :param count: how many.
    :param word: the singular noun.
    :returns: the count and the noun, pluralised with an ``s``.
    """
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def available_on(spec: CommandSpec, surface: str) -> bool:
    """Tell whether ``dispatch_slash`` would run this command on this surface.

    :param spec: the command.
    :param surface: ``cli``, ``tui``, ``acp`` or ``api``.
    :returns: False when the surface is excluded or the command needs the terminal UI elsewhere.
    """
    return surface not in spec.unavailable_on and not (spec.needs_terminal_ui and surface != "tui")
