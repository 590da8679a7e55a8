"""The agent's own tools: ``clarify`` (ask the user) and ``todo`` (keep a task list).

Neither touches files or processes. ``clarify`` raises a clarify question (docs/reference/core.md#questions)
and ``todo`` validates the full list each time and hands it to the events as ``TodoItem`` records.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from hermes_core import TodoItem, ToolContext, ToolError, ToolResult
from hermes_tools.common import str_arg

Status = Literal["pending", "in_progress", "completed", "cancelled"]
Priority = Literal["high", "medium", "low"]
STATUSES: tuple[Status, ...] = ("pending", "in_progress", "completed", "cancelled")
PRIORITIES: tuple[Priority, ...] = ("high", "medium", "low")
_MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}


def clarify(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Ask the user a question and return the answer.

    :param args: ``question`` and optional ``choices`` (a list of strings).
    :param ctx: the running tool's context.
    :returns: the answer, or a note that the user did not answer.
    """
    question = str_arg(args, "question")
    raw_choices = args.get("choices")
    choices: tuple[str, ...] | None = None
    if raw_choices is not None:
        if not isinstance(raw_choices, list | tuple) or not all(
            isinstance(choice, str) and choice for choice in raw_choices
        ):
            raise ToolError("'choices' must be a list of non-empty strings")
        choices = tuple(raw_choices) or None
    answer = ctx.ask("clarify", question=question, choices=choices)
    if not answer:
        return ToolResult(text="The user did not answer.")
    return ToolResult(text=f"The user answered: {answer}")


def _item(index: int, raw: object) -> TodoItem:
    where = f"todos[{index}]"
    if not isinstance(raw, dict):
        raise ToolError(f"{where} must be an object with id, content and status")
    item_id = raw.get("id")
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if not isinstance(item_id, str) or not item_id.strip():
        raise ToolError(f"{where}: 'id' must be a non-empty string")
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ToolError(f"{where}: 'content' must be a non-empty string")
    status = raw.get("status")
    if status not in STATUSES:
        raise ToolError(f"{where}: 'status' must be one of {', '.join(STATUSES)} (got {status!r})")
    priority = raw.get("priority")
    if priority is None:
        priority = "medium"
    if priority not in PRIORITIES:
        raise ToolError(f"{where}: 'priority' must be one of {', '.join(PRIORITIES)} (got {priority!r})")
    return TodoItem(
        id=item_id, content=content, status=cast(Status, status), priority=cast(Priority, priority)
    )


def parse_todos(raw: object) -> tuple[TodoItem, ...]:
    """Validate the ``todos`` argument into ``TodoItem`` records.

    :param raw: the argument value.
    :returns: the items, in the given order.
    """
    if not isinstance(raw, list):
        raise ToolError("'todos' must be a list of items")
    items = tuple(_item(index, entry) for index, entry in enumerate(raw))
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ToolError(f"duplicate todo id {item.id!r}; ids must be unique")
        seen.add(item.id)
    return items


def todo(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Replace the todo list with the given items.

    :param args: ``todos``, the full list.
    :param ctx: the running tool's context.
    :returns: a summary and the list, carrying the items for the events.
    """
    items = parse_todos(args.get("todos"))
    if not items:
        return ToolResult(text="Todo list cleared.", todos=())
    counts = {status: sum(item.status == status for item in items) for status in STATUSES}
    parts = [f"{counts[status]} {status.replace('_', ' ')}" for status in STATUSES if counts[status]]
    noun = "item" if len(items) == 1 else "items"
    lines = [f"Todo list updated: {len(items)} {noun} ({', '.join(parts)})"]
    for item in items:
        flag = "" if item.priority == "medium" else f" ({item.priority} priority)"
        lines.append(f"{_MARKS[item.status]} {item.id}. {item.content}{flag}")
    return ToolResult(text="\n".join(lines), todos=items)
