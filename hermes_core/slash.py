"""Running a registered ``/command`` typed into a prompt
(docs/slash-commands.md#where-commands-are-recognised)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hermes_core.errors import CommandNotAvailable, CommandUsageError, SessionBusy
from hermes_core.records import CommandContext, CommandResult, SessionFilter

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session

COMMAND_RE = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_\-]*)(?:\s+(.*))?$", re.DOTALL)


async def dispatch_slash(
    kernel: Kernel,
    session: Session | None,
    text: str,
    *,
    surface: str,
    sees: SessionFilter | None = None,
    charge: ChargeTo | None = None,
) -> CommandResult | None:
    """Run the command ``text`` names on ``surface``; None when the text is not one.

    :param sees: which stored sessions the caller may see (:attr:`CommandContext.sees`).
    :param charge: who the command's model calls charge (:attr:`CommandContext.charge`).
    """
    if not isinstance(text, str):
        return None
    match = COMMAND_RE.match(text.strip())
    if not match:
        return None
    name, args = match.group(1), (match.group(2) or "").strip()
    spec = kernel.registry.command(name)
    if spec is None:
        return None
    if surface in spec.unavailable_on or (spec.needs_terminal_ui and surface != "tui"):
        raise CommandNotAvailable(spec.name, surface)
    if spec.needs_session and session is None:
        raise CommandUsageError(spec.usage or f"/{spec.name}", f"/{spec.name} needs a session")
    if spec.busy_blocked and session is not None and session.busy:
        raise SessionBusy("busy", f"/{spec.name} cannot run while a turn is running; interrupt first")
    return await spec.handler(
        CommandContext(
            kernel=kernel,
            session=session,
            args=args,
            surface=surface,
            name=spec.name,
            sees=sees,
            charge=charge,
        )
    )
