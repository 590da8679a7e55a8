"""Register the ``delegate_task`` tool (docs/delegation.md).

Only the record is built here; the implementation is imported on the first call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_core import ConfigSection, ToolContext, ToolResult, ToolSpec, hookimpl

TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "description": "What the child agent must achieve, self-contained."},
        "context": {"type": "string", "description": "Facts the child needs: paths, constraints, findings."},
        "toolsets": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Toolsets the child may use (default: the parent's tools).",
        },
        "role": {
            "type": "string",
            "enum": ["leaf", "orchestrator"],
            "description": "orchestrator children may delegate further, within the depth limit.",
        },
        "model": {"type": "string", "description": "Model for the child (default: the parent's)."},
    },
    "required": ["goal"],
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **TASK_SCHEMA["properties"],
        "tasks": {
            "type": "array",
            "items": TASK_SCHEMA,
            "description": "Several independent tasks, run in parallel (instead of goal).",
        },
        "background": {
            "type": "boolean",
            "description": "Single task only: return a delegation_id at once and deliver the result later.",
        },
    },
}


async def delegate_task(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run the ``delegate_task`` tool (a coroutine: it waits for children on the loop)."""
    from hermes_delegation.tool import delegate

    return await delegate(args, ctx)


def _title(args: Mapping[str, Any]) -> str:
    tasks = args.get("tasks")
    if isinstance(tasks, list) and tasks:
        return f"Delegate {len(tasks)} tasks"
    goal = str(args.get("goal", ""))
    return f"Delegate: {goal[:60]}" if goal else "Delegate a task"


@hookimpl
def hermes_tools() -> ToolSpec:
    """Declare ``delegate_task``."""
    return ToolSpec(
        name="delegate_task",
        description=(
            "Hand one task, or several independent tasks at once, to child agents with a fresh "
            "conversation and the same workspace. Each child works on its own and returns a summary; "
            "give each a self-contained goal and the context it needs. Batches run in parallel."
        ),
        schema=SCHEMA,
        handler=delegate_task,
        kind="other",
        title=_title,
        toolset="delegation",
    )


@hookimpl
def hermes_config_sections() -> ConfigSection:
    """``[delegation]``: the limits on child agents, so ``hermes config`` knows their keys."""
    return ConfigSection(
        name="delegation",
        summary="limits on delegated child agents (docs/delegation.md)",
        settings_model="hermes_delegation.settings:DelegationSettings",
    )
