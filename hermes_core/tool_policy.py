"""Which tools the model sees, what it is told, and what policy plugins say about a call.

Used by the turn loop and the tool round; the kernel owns the registry and the plugin manager.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.hook_calls import call_each
from hermes_core.records import PolicyDecision, ToolCallInfo

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.providers import ToolSchema
    from hermes_core.session.live import Session
    from hermes_core.tools import ToolSpec

log = logging.getLogger("hermes.tools")
SYSTEM_PROMPT = (
    "You are Hermes, a coding agent working in the user's workspace. Use the tools to read, search "
    "and change files and to run commands. Be concise and accurate."
)


def visible_tool(kernel: Kernel, session: Session, name: str, answerable: frozenset[str]) -> ToolSpec | None:
    """Return the tool if the model may see it in this turn (not hidden, its questions answerable)."""
    spec = kernel.registry.tool(name, session.id)
    if spec is None or name in session.hidden_tools or not spec.needs <= answerable:
        return None
    return spec


def tool_schemas(kernel: Kernel, session: Session, answerable: frozenset[str]) -> tuple[ToolSchema, ...]:
    """Return the schemas of the tools offered to the model."""
    from hermes_core.providers import ToolSchema

    return tuple(
        ToolSchema(s.name, s.description, s.schema)
        for s in kernel.registry.tools_for(session.id)
        if visible_tool(kernel, session, s.name, answerable) is not None
    )


def system_prompt(kernel: Kernel, session: Session) -> str:
    """Return the core prompt with the workspace and the session's overlay."""
    overlay = session.record.system_overlay
    base = f"{SYSTEM_PROMPT}\nWorkspace: {session.cwd}"
    return f"{base}\n\n{overlay}" if overlay else base


def policy_decisions(
    kernel: Kernel,
    session: Session,
    call_id: str,
    spec: ToolSpec,
    args: Mapping[str, Any],
    paths: Sequence[Path],
    command: str | None,
) -> list[tuple[str, PolicyDecision | None]]:
    """Ask every ``hermes_before_tool_call`` plugin; a plugin that raises counts as deny."""
    info = ToolCallInfo(
        session_id=session.id,
        call_id=call_id,
        name=spec.name,
        kind=spec.kind,
        args=dict(args),
        paths=tuple(paths),
        command=command,
        cwd=session.cwd,
    )
    out: list[tuple[str, PolicyDecision | None]] = []
    for outcome in call_each(kernel.pm, "hermes_before_tool_call", session=session, call=info):
        result = outcome.value
        if outcome.error is not None:
            log.warning("policy plugin %s failed: %s", outcome.plugin, outcome.error)
            result = PolicyDecision("deny", f"policy plugin {outcome.plugin} failed")
        out.append((outcome.plugin, result if isinstance(result, PolicyDecision) else None))
    return out


def remembered_keys(kernel: Kernel, session: Session) -> Callable[[str], bool]:
    """Return a predicate: is this approval key remembered (live session memory or allowlist)?"""
    allowlist = kernel.allowlist
    memory = session.approved_keys

    def remembered(key: str) -> bool:
        return key in memory or bool(allowlist is not None and allowlist.contains(key))

    return remembered
