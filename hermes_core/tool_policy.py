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
    """Return the schemas of the tools offered to the model.

    Built for every model call: the checks of :func:`visible_tool` are made inline (a session
    without tools of its own sees each tool as listed, so it is not looked up again), and each
    tool's schema object is made once and kept (~3 µs per tool per call otherwise).
    """
    registry = kernel.registry
    own = registry.session_tools.get(session.id)
    hidden = session.hidden_tools
    out: list[ToolSchema] = []
    for listed in registry.tools_for(session.id):
        spec = registry.tool(listed.name, session.id) if own else listed
        if spec is None or listed.name in hidden or not spec.needs <= answerable:
            continue
        out.append(_schema_of(listed))
    return tuple(out)


# id(spec) -> (spec, its schema): the spec is kept, so its id is not reused while it is here.
_SCHEMAS: dict[int, tuple[ToolSpec, ToolSchema]] = {}


def _schema_of(spec: ToolSpec) -> ToolSchema:
    known = _SCHEMAS.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    from hermes_core.providers import ToolSchema

    schema = ToolSchema(spec.name, spec.description, spec.schema)
    if len(_SCHEMAS) >= 4096:  # session tools come and go: never grow without bound
        _SCHEMAS.clear()
    _SCHEMAS[id(spec)] = (spec, schema)
    return schema


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
