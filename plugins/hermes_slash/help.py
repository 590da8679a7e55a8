"""``/help``: every registered command grouped by category, or the details of one.

It reads the kernel's registry, so commands from any plugin (first- or third-party) appear,
and a disabled plugin's commands do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import CommandResult, CommandUsageError
from hermes_slash.common import available_on

if TYPE_CHECKING:
    from hermes_core import CommandContext, CommandSpec

USAGE = "/help [COMMAND]"
MAX_COLUMN = 24


def _label(spec: CommandSpec) -> str:
    return spec.usage.strip() or f"/{spec.name}"


def describe(spec: CommandSpec, surface: str) -> dict[str, Any]:
    """Return one command as structured data for transports.

    :param spec: the command.
    :param surface: the surface asking, to report availability.
    :returns: name, summary, usage, aliases, category, subcommands and flags.
    """
    return {
        "name": spec.name,
        "summary": spec.summary,
        "usage": _label(spec),
        "aliases": list(spec.aliases),
        "category": spec.category,
        "subcommands": list(spec.subcommands),
        "available": available_on(spec, surface),
        "needs_session": spec.needs_session,
        "busy_blocked": spec.busy_blocked,
    }


def _notes(spec: CommandSpec, surface: str) -> list[str]:
    notes: list[str] = []
    if spec.aliases:
        notes.append("also " + ", ".join(f"/{a}" for a in spec.aliases))
    if not available_on(spec, surface):
        notes.append("not available here")
    return notes


def list_all(commands: list[CommandSpec], surface: str) -> str:
    """Format every command, grouped by category, one line each.

    :param commands: the registered commands.
    :param surface: the surface asking.
    :returns: the text ``/help`` prints.
    """
    if not commands:
        return "No slash commands are registered."
    width = min(MAX_COLUMN, max(len(_label(s)) for s in commands))
    categories = sorted({s.category for s in commands})
    lines = ["Slash commands:"]
    for category in categories:
        lines.append("")
        lines.append(f"{category.capitalize()}:")
        for spec in sorted((s for s in commands if s.category == category), key=lambda s: s.name):
            notes = _notes(spec, surface)
            tail = f" ({'; '.join(notes)})" if notes else ""
            label = _label(spec)
            if len(label) > width:
                # A long usage line gets the summary underneath rather than stretching the column.
                lines.append(f"  {label}")
                lines.append(f"  {'':{width}}  {spec.summary}{tail}")
            else:
                lines.append(f"  {label.ljust(width)}  {spec.summary}{tail}")
    lines.append("")
    lines.append("Type /help COMMAND for details of one command.")
    return "\n".join(lines)


def detail(spec: CommandSpec, surface: str) -> str:
    """Format everything known about one command.

    :param spec: the command.
    :param surface: the surface asking.
    :returns: several lines of text.
    """
    lines = [_label(spec), f"  {spec.summary}"]
    if spec.aliases:
        lines.append("  Aliases: " + ", ".join(f"/{a}" for a in spec.aliases))
    if spec.subcommands:
        lines.append("  Subcommands: " + ", ".join(spec.subcommands))
    lines.append(f"  Category: {spec.category}")
    if spec.busy_blocked:
        lines.append("  Cannot run while a turn is running.")
    if spec.needs_terminal_ui:
        lines.append("  Only available in the terminal UI.")
    if not available_on(spec, surface):
        lines.append(f"  Not available here ({surface}).")
    return "\n".join(lines)


async def help_command(ctx: CommandContext) -> CommandResult:
    """Run ``/help [COMMAND]``.

    :param ctx: the dispatch context; ``args`` may name one command, with or without ``/``.
    :returns: the listing (``data.commands``) or one command's details (``data.command``).
    :raises CommandUsageError: the named command is not registered, or several names were given.
    """
    registry = ctx.kernel.registry
    words = ctx.args.split()
    if len(words) > 1:
        raise CommandUsageError(USAGE, f"name one command at most; usage: {USAGE}")
    if words:
        name = words[0].lstrip("/")
        spec = registry.command(name)
        if spec is None:
            raise CommandUsageError(USAGE, f"unknown command /{name}; /help lists the commands")
        return CommandResult(
            kind="exec", output=detail(spec, ctx.surface), data={"command": describe(spec, ctx.surface)}
        )
    commands = list(registry.commands.values())
    data = {"commands": [describe(s, ctx.surface) for s in sorted(commands, key=lambda s: s.name)]}
    return CommandResult(kind="exec", output=list_all(commands, ctx.surface), data=data)
