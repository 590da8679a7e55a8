"""clarify and todo: questions to the user and the validated todo list."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tools_testkit import FakeToolContext, call

from hermes_core import TodoItem, ToolError, ToolSpec


def test_clarify_asks_and_returns_the_answer(
    specs: dict[str, ToolSpec], make_ctx: Callable[..., FakeToolContext]
) -> None:
    ctx = make_ctx(answers=["blue"])
    result = call(specs["clarify"], {"question": "Which colour?", "choices": ["red", "blue"]}, ctx)
    assert ctx.questions == [("clarify", {"question": "Which colour?", "choices": ("red", "blue")})]
    assert not result.is_error
    assert "blue" in result.text


def test_clarify_without_an_answer_is_not_an_error(specs: dict[str, ToolSpec], ctx: FakeToolContext) -> None:
    result = call(specs["clarify"], {"question": "Proceed?"}, ctx)
    assert ctx.questions == [("clarify", {"question": "Proceed?", "choices": None})]
    assert result.text == "The user did not answer."
    assert not result.is_error


def test_clarify_rejects_bad_choices(specs: dict[str, ToolSpec], ctx: FakeToolContext) -> None:
    with pytest.raises(ToolError, match="choices"):
        call(specs["clarify"], {"question": "?", "choices": "yes"}, ctx)
    assert ctx.questions == []


def test_todo_returns_items_and_a_summary(specs: dict[str, ToolSpec], ctx: FakeToolContext) -> None:
    todos = [
        {"id": "1", "content": "Write tests", "status": "completed", "priority": "high"},
        {"id": "2", "content": "Fix bug", "status": "in_progress"},
        {"id": "3", "content": "Docs", "status": "pending", "priority": "low"},
    ]
    result = call(specs["todo"], {"todos": todos}, ctx)
    assert result.todos == (
        TodoItem(id="1", content="Write tests", status="completed", priority="high"),
        TodoItem(id="2", content="Fix bug", status="in_progress", priority="medium"),
        TodoItem(id="3", content="Docs", status="pending", priority="low"),
    )
    lines = result.text.splitlines()
    assert lines[0] == "Todo list updated: 3 items (1 pending, 1 in progress, 1 completed)"
    assert lines[1:] == ["[x] 1. Write tests (high priority)", "[>] 2. Fix bug", "[ ] 3. Docs (low priority)"]


def test_todo_empty_list_clears(specs: dict[str, ToolSpec], ctx: FakeToolContext) -> None:
    result = call(specs["todo"], {"todos": []}, ctx)
    assert result.todos == ()


@pytest.mark.parametrize(
    ("todos", "problem"),
    [
        ("not a list", "'todos' must be a list"),
        ([{"id": "1", "content": "x", "status": "done"}], "todos[0]: 'status' must be one of"),
        (
            [{"id": "1", "content": "x", "status": "pending", "priority": "urgent"}],
            "'priority' must be one of",
        ),
        ([{"id": "", "content": "x", "status": "pending"}], "todos[0]: 'id'"),
        ([{"id": "1", "status": "pending"}], "todos[0]: 'content'"),
        (
            [
                {"id": "1", "content": "a", "status": "pending"},
                {"id": "1", "content": "b", "status": "pending"},
            ],
            "duplicate todo id '1'",
        ),
        ([{"id": "1", "content": "a", "status": "pending"}, 7], "todos[1] must be an object"),
    ],
)
def test_todo_rejects_bad_items(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, todos: object, problem: str
) -> None:
    with pytest.raises(ToolError) as info:
        call(specs["todo"], {"todos": todos}, ctx)
    assert problem in str(info.value)
