"""``delegate_task``: check the request against the limits, spawn the children, wait, report.

Every refusal is a :class:`ToolError` the model reads; nothing here waits for a free slot, so a
request past a limit never hangs. A batch runs all its children at once; the parent's interrupt
(the tool's cancellation) interrupts each of them before the tool gives up.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from typing import Any

from hermes_core import BackgroundCompleted, ConfigError, Session, ToolContext, ToolError, ToolResult
from hermes_delegation.child import ChildResult, run_child

#: Question kinds a child may pass up to the parent's host; clarify and secret never reach a child.
CHILD_ANSWERABLE = frozenset({"approval", "sudo"})
NEVER_FOR_CHILDREN = frozenset({"clarify", "request_secret"})
MAX_GOAL_CHARS = 20_000
NOTE_CHARS = 4000


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One task of a ``delegate_task`` call, validated."""

    goal: str
    context: str
    toolsets: tuple[str, ...] | None
    role: str
    model: str | None


def _text(raw: dict[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            raise ToolError(f"{where}: '{key}' is required")
        return ""
    if not isinstance(value, str):
        raise ToolError(f"{where}: '{key}' must be a string")
    if required and not value.strip():
        raise ToolError(f"{where}: '{key}' is empty")
    if len(value) > MAX_GOAL_CHARS:
        raise ToolError(f"{where}: '{key}' is longer than {MAX_GOAL_CHARS} characters")
    return value


def parse_task(raw: Any, where: str) -> TaskRequest:
    """Validate one task object."""
    if not isinstance(raw, dict):
        raise ToolError(f"{where}: a task is an object with 'goal'")
    toolsets = raw.get("toolsets")
    if toolsets is not None and (
        not isinstance(toolsets, list) or not all(isinstance(t, str) and t for t in toolsets)
    ):
        raise ToolError(f"{where}: 'toolsets' must be a list of toolset names")
    role = raw.get("role") or "leaf"
    if role not in ("leaf", "orchestrator"):
        raise ToolError(f"{where}: 'role' must be 'leaf' or 'orchestrator'")
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ToolError(f"{where}: 'model' must be a model name")
    return TaskRequest(
        goal=_text(raw, "goal", where, required=True),
        context=_text(raw, "context", where),
        toolsets=tuple(toolsets) if toolsets is not None else None,
        role=role,
        model=model,
    )


def parse_args(args: dict[str, Any]) -> tuple[list[TaskRequest], bool]:
    """Return the tasks and the background flag of a call."""
    background = args.get("background", False)
    if not isinstance(background, bool):
        raise ToolError("'background' must be true or false")
    tasks = args.get("tasks")
    if tasks is not None:
        if "goal" in args:
            raise ToolError("give either 'goal' (one task) or 'tasks' (a batch), not both")
        if not isinstance(tasks, list) or not tasks:
            raise ToolError("'tasks' must be a non-empty list of {goal, context, toolsets, role}")
        if background:
            raise ToolError("'background' is for a single task; run a batch in the foreground")
        return [parse_task(t, f"tasks[{i}]") for i, t in enumerate(tasks)], False
    return [parse_task(args, "delegate_task")], background


def hidden_for(parent: Session, task: TaskRequest, *, may_delegate: bool) -> frozenset[str]:
    """Return the tool names a child of ``parent`` running ``task`` must not see."""
    tools = parent.kernel.registry.tools
    hidden = set(parent.hidden_tools) | NEVER_FOR_CHILDREN
    hidden |= {name for name, spec in tools.items() if spec.needs - CHILD_ANSWERABLE}
    if not may_delegate:
        hidden.add("delegate_task")
    if task.toolsets is not None:
        known = {spec.toolset for spec in tools.values()}
        unknown = sorted(set(task.toolsets) - known)
        if unknown:
            raise ToolError(f"unknown toolsets {unknown}; known: {sorted(known)}")
        hidden |= {name for name, spec in tools.items() if spec.toolset not in task.toolsets}
    return frozenset(hidden)


def child_prompt(task: TaskRequest) -> str:
    """The first (and only) user message a child gets."""
    if not task.context.strip():
        return task.goal
    return f"{task.goal}\n\nContext:\n{task.context}"


async def delegate(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Check, spawn, wait and report (see the module docstring)."""
    if not isinstance(args, dict):
        raise ToolError("arguments must be an object")
    parent = ctx.session
    subagents = parent.kernel.sessions.children
    tasks, background = parse_args(args)
    try:
        limits = subagents.limits
    except ConfigError as exc:
        raise ToolError(f"delegation is misconfigured: {exc}") from exc
    if subagents.is_paused(parent.id):
        raise ToolError("delegation is paused for this session; do the work yourself or try later")
    me = subagents.get(parent.id)
    if me is not None and me.role != "orchestrator":
        raise ToolError("a leaf subagent cannot delegate; finish the task yourself")
    depth = subagents.depth_of(parent) + 1
    if depth > limits.max_spawn_depth:
        raise ToolError(
            f"cannot delegate: a child here would be at depth {depth}, past max_spawn_depth "
            f"{limits.max_spawn_depth}; finish the task yourself"
        )
    if background:
        running = subagents.active_count(parent.id, background=True)
        if running >= limits.max_background_children:
            raise ToolError(
                f"{running} background children already run (max_background_children "
                f"{limits.max_background_children}); wait for one to finish"
            )
    else:
        running = subagents.active_count(parent.id, background=False)
        if running + len(tasks) > limits.max_concurrent_children:
            raise ToolError(
                f"{len(tasks)} tasks would make {running + len(tasks)} children at once, past "
                f"max_concurrent_children {limits.max_concurrent_children}; send at most "
                f"{max(limits.max_concurrent_children - running, 0)} per call"
            )
    # Checked up front, so a bad toolset fails the call before any child starts.
    hidden = [
        hidden_for(parent, t, may_delegate=t.role == "orchestrator" and depth < limits.max_spawn_depth)
        for t in tasks
    ]
    answerable = ctx.answerable & CHILD_ANSWERABLE
    trace = getattr(ctx, "traceparent", None)  # a context from before tracing has none
    if background:
        return await _start_background(parent, tasks[0], hidden[0], answerable, trace)
    results = await _run_batch(parent, tasks, hidden, answerable, trace)
    payload = {"results": [r.as_dict() for r in results]}
    failed = all(r.status != "completed" for r in results)
    return ToolResult(json.dumps(payload, ensure_ascii=False), is_error=failed)


async def _run_batch(
    parent: Session,
    tasks: list[TaskRequest],
    hidden: list[frozenset[str]],
    answerable: frozenset[str],
    traceparent: str | None,
) -> list[ChildResult]:
    subagents = parent.kernel.sessions.children
    spawned = []
    try:
        for index, (task, hide) in enumerate(zip(tasks, hidden, strict=True)):
            spawned.append(
                await subagents.spawn(
                    parent,
                    goal=task.goal,
                    model=task.model,
                    hidden_tools=hide,
                    role=task.role,
                    task_index=index,
                    task_count=len(tasks),
                )
            )
    except BaseException as exc:
        for sub in spawned:
            if sub.session is not None:
                await sub.session.close()
            subagents.finish(sub, "error")
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise ToolError(f"could not start a child: {parent.kernel.redactor(str(exc))}") from exc
    runs = [
        asyncio.ensure_future(run_child(sub, child_prompt(task), answerable, traceparent))
        for sub, task in zip(spawned, tasks, strict=True)
    ]
    try:
        return list(await asyncio.gather(*runs))
    except asyncio.CancelledError:
        # gather cancelled every run: each interrupts its child and reports it; wait for that.
        await asyncio.gather(*runs, return_exceptions=True)
        raise


async def _start_background(
    parent: Session,
    task: TaskRequest,
    hidden: frozenset[str],
    answerable: frozenset[str],
    traceparent: str | None,
) -> ToolResult:
    subagents = parent.kernel.sessions.children
    delegation_id = "dg_" + secrets.token_hex(4)
    try:
        sub = await subagents.spawn(
            parent,
            goal=task.goal,
            model=task.model,
            hidden_tools=hidden,
            role=task.role,
            delegation_id=delegation_id,
        )
    except Exception as exc:
        raise ToolError(f"could not start a child: {parent.kernel.redactor(str(exc))}") from exc

    async def work() -> None:
        result = await run_child(sub, child_prompt(task), answerable, traceparent)
        status = {"completed": "complete", "error": "error", "interrupted": "interrupted"}[result.status]
        text = result.summary if result.status == "completed" else (result.error or result.status)
        parent.emit(
            BackgroundCompleted(session_id=parent.id, task_id=delegation_id, text=text, status=status)  # type: ignore[arg-type]
        )
        # Kept for the parent's model: its next tool boundary in this turn reads it, else the
        # system prompt of its next turn (exactly once either way; never lost with a steer
        # buffer that a turn ending without another tool call would drop).
        subagents.add_note(parent.id, f"[delegation {delegation_id} {result.status}] {text[:NOTE_CHARS]}")

    sub.task = parent.kernel.spawn(work(), name=f"hermes-{delegation_id}")
    body = {"delegation_id": delegation_id, "subagent_id": sub.subagent_id, "status": "started"}
    return ToolResult(json.dumps(body))
