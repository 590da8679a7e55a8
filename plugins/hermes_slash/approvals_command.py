"""``/approvals [PROFILE]``: show or set the session's approval profile
(docs/reference/core.md#approval-profiles).

``off`` is set only when it is typed out; nothing cycles or toggles into it. ACP offers ``off``
only through its own mode list, so ``/approvals off`` there answers "not available here".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import CommandNotAvailable, CommandResult, CommandUsageError
from hermes_slash.common import session_of

if TYPE_CHECKING:
    from hermes_core import CommandContext

USAGE = "/approvals [ask_everything | default | accept_edits | off]"
PROFILES: dict[str, str] = {
    "ask_everything": "asks before edits and before running anything",
    "default": "asks before edits; reads and commands run",
    "accept_edits": "edits and commands run; risky commands and sensitive paths still ask",
    "off": "nothing ever asks",
}


def _listing(current: str) -> str:
    lines = [f"Approval profile: {current}"]
    for name, meaning in PROFILES.items():
        mark = "*" if name == current else " "
        lines.append(f" {mark} {name:<15} {meaning}")
    lines.append("Change it with /approvals PROFILE.")
    return "\n".join(lines)


async def approvals_command(ctx: CommandContext) -> CommandResult:
    """Run ``/approvals [PROFILE]``.

    :param ctx: the dispatch context; ``args`` names the new profile, if any.
    :returns: the current profile and the choices, or a confirmation of the change;
        ``data`` holds ``profile`` (and ``previous`` after a change).
    :raises CommandUsageError: an unknown profile or more than one word.
    :raises CommandNotAvailable: ``off`` on ACP.
    """
    session = session_of(ctx)
    words = ctx.args.split()
    current = session.profile
    if not words:
        return CommandResult(
            kind="exec", output=_listing(current), data={"profile": current, "profiles": list(PROFILES)}
        )
    if len(words) > 1 or words[0] not in PROFILES:
        raise CommandUsageError(USAGE, f"unknown approval profile {' '.join(words)!r}; usage: {USAGE}")
    wanted = words[0]
    if wanted == "off" and ctx.surface == "acp":
        raise CommandNotAvailable(
            ctx.name, ctx.surface, "/approvals off is not available here; use the session's mode list"
        )
    await session.set_profile(wanted)
    output = f"Approval profile set to {wanted}: {PROFILES[wanted]}."
    if wanted == current:
        output = f"Approval profile is already {wanted}."
    return CommandResult(kind="exec", output=output, data={"profile": wanted, "previous": current})
